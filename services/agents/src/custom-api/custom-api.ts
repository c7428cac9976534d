import { OutboundFailed, OutboundRefused, type OutboundClient } from '@voiceapi/kit/http';
import { z } from 'zod';
import type { Doctor } from '../domain/agent';
import { agentsReasons } from '../reasons';

/** Where and how to call one agent's custom API. */
export interface CustomApiTarget {
  baseUrl: string;
  /** The opened bearer secret, if any; it goes in the Authorization header and nowhere else. */
  secret?: string;
  timeoutMs: number;
}

const doctorsAnswer = z.object({
  doctors: z
    .array(
      z.object({
        id: z.coerce.string().min(1),
        name: z.string().min(1),
        specialty: z.string().optional().nullable(),
        branchId: z.coerce.string().optional().nullable(),
      }),
    )
    .max(10_000),
});
const lookupAnswer = z.object({ found: z.boolean(), record: z.record(z.string(), z.unknown()).optional().nullable() });
const validateAnswer = z.object({ valid: z.boolean(), reason: z.string().optional().nullable() });
const slotsAnswer = z.object({ slots: z.array(z.object({ start: z.string().min(1) })).max(10_000) });
const appointmentAnswer = z.object({ appointmentId: z.coerce.string().min(1), confirmed: z.boolean() });

/**
 * The tenant's own API, as the decisions file's contract describes it (`GET /doctors?branchId=`,
 * `POST /crm/lookup`, `POST /validate`, `GET /slots`, `POST /appointments`), called through the
 * kit's outbound client: refused addresses are the tenant's mistake (`url_not_allowed`),
 * everything that goes wrong on the far side is `custom_api_error`.
 */
export class CustomApi {
  constructor(private readonly client: OutboundClient) {}

  /** The form of a base URL, when an agent is saved (names are resolved at call time). */
  checkBaseUrl(raw: string): string {
    try {
      return this.client.checkUrl(raw).toString();
    } catch (err) {
      throw mapped(err);
    }
  }

  async doctors(target: CustomApiTarget, branchId: string | undefined): Promise<Doctor[]> {
    const answer = await this.call(
      target,
      `/doctors${branchId ? `?branchId=${encodeURIComponent(branchId)}` : ''}`,
      { method: 'GET' },
      doctorsAnswer,
    );
    return answer.doctors.map((d) => ({
      id: d.id,
      name: d.name,
      ...(d.specialty && { specialty: d.specialty }),
      ...(d.branchId && { branchId: d.branchId }),
    }));
  }

  async crmLookup(
    target: CustomApiTarget,
    phone: string,
  ): Promise<{ found: boolean; record?: Record<string, unknown> }> {
    const answer = await this.call(
      target,
      '/crm/lookup',
      { method: 'POST', body: JSON.stringify({ phone }) },
      lookupAnswer,
    );
    return { found: answer.found, ...(answer.found && answer.record && { record: answer.record }) };
  }

  async validate(
    target: CustomApiTarget,
    phone: string,
    record: Record<string, unknown> | undefined,
  ): Promise<{ valid: boolean; reason?: string }> {
    const answer = await this.call(
      target,
      '/validate',
      { method: 'POST', body: JSON.stringify({ phone, record: record ?? null }) },
      validateAnswer,
    );
    return { valid: answer.valid, ...(answer.reason && { reason: answer.reason }) };
  }

  /** Free slots of a doctor on a day (`YYYY-MM-DD`), in the order the API gives them. */
  async slots(target: CustomApiTarget, doctorId: string, date: string): Promise<{ start: string }[]> {
    const query = new URLSearchParams({ doctorId, date });
    return (await this.call(target, `/slots?${query.toString()}`, { method: 'GET' }, slotsAnswer)).slots.map((s) => ({
      start: s.start,
    }));
  }

  async book(
    target: CustomApiTarget,
    booking: { doctorId: string; start: string; phone: string },
  ): Promise<{ appointmentId: string; confirmed: boolean }> {
    return this.call(target, '/appointments', { method: 'POST', body: JSON.stringify(booking) }, appointmentAnswer);
  }

  private async call<T>(
    target: CustomApiTarget,
    path: string,
    req: { method: 'GET' | 'POST'; body?: string },
    shape: z.ZodType<T>,
  ): Promise<T> {
    const url = `${target.baseUrl.replace(/\/+$/, '')}${path}`;
    const headers: Record<string, string> = {
      accept: 'application/json',
      ...(req.body !== undefined && { 'content-type': 'application/json' }),
    };
    if (target.secret) headers.authorization = `Bearer ${target.secret}`;
    let res;
    try {
      res = await this.client.send(url, { ...req, headers, timeoutMs: target.timeoutMs });
    } catch (err) {
      throw mapped(err);
    }
    if (res.status < 200 || res.status >= 300)
      throw agentsReasons.error('custom_api_error', `the custom API answered ${res.status} to ${req.method} ${path}`);
    let json: unknown;
    try {
      json = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw agentsReasons.error('custom_api_error', `the custom API's answer to ${req.method} ${path} is not JSON`);
    }
    const parsed = shape.safeParse(json);
    if (!parsed.success)
      throw agentsReasons.error(
        'custom_api_error',
        `the custom API's answer to ${req.method} ${path} does not have the documented shape`,
      );
    return parsed.data;
  }
}

function mapped(err: unknown): Error {
  if (err instanceof OutboundRefused) {
    return err.reason === 'redirects'
      ? agentsReasons.error('custom_api_error', `the custom API ${err.message}`)
      : agentsReasons.error('url_not_allowed', `the custom API address is not allowed: ${err.message}`);
  }
  if (err instanceof OutboundFailed)
    return agentsReasons.error('custom_api_error', `the custom API failed: ${err.message}`);
  return err as Error;
}
