import type { AppointmentScope, Doctor } from '../domain/agent';

/** What a script is built from. */
export interface ScriptInput {
  agentName: string;
  category?: string;
  greetingMessage?: string;
  appointmentScope: AppointmentScope;
  company?: {
    id: string;
    name: string;
    description?: string;
    industry?: string;
    website?: string;
    timezone?: string;
    businessHours?: Record<string, unknown>;
  };
  documents: { fileId: string; title: string; text: string }[];
  doctors: Doctor[];
  booking: { slotsEnabled: boolean; bookingEnabled: boolean };
}

/**
 * Writes an inbound agent's script. The default is local and deterministic (no model download, no
 * network); a language-model adapter implements the same interface and is chosen by
 * `SCRIPT_GENERATOR`.
 */
export interface ScriptGenerator {
  readonly name: string;
  generate(input: ScriptInput): Promise<string>;
}

/** The line an agent answers the phone with: its greeting, else a thank-you naming the company. */
export const openingLine = (input: Pick<ScriptInput, 'greetingMessage' | 'company'>): string =>
  input.greetingMessage?.trim() ||
  `Thank you for calling ${input.company?.name ?? 'the practice'}. How can I help you today?`;

/** Characters of each document's text the local generator quotes as reference material. */
const EXCERPT_CHARS = 1_500;

/**
 * A template: the opening line, who the agent answers for, what it may do, and the documents'
 * opening text as reference. The same input always gives the same script.
 */
export class LocalScriptGenerator implements ScriptGenerator {
  readonly name = 'local';

  // eslint-disable-next-line @typescript-eslint/require-await -- ScriptGenerator is async (the LLM one awaits); a throw here stays a rejection
  async generate(input: ScriptInput): Promise<string> {
    const c = input.company;
    const org = c?.name ?? 'the practice';
    const lines: string[] = [
      `# Inbound script: ${input.agentName}`,
      '',
      '## Opening',
      openingLine(input),
      '',
      '## Who you answer for',
      `You answer calls for ${org}${c?.industry ? ` (${c.industry})` : ''}${input.category ? `, as its ${input.category} line` : ''}.`,
    ];
    if (c?.description) lines.push(c.description.trim());
    if (c?.website) lines.push(`Website: ${c.website}`);
    if (c?.timezone) lines.push(`Times are in ${c.timezone}.`);
    if (c?.businessHours) lines.push(`Business hours: ${stableJson(c.businessHours)}`);
    lines.push('', '## What you can do');
    lines.push(
      `- Appointments are handled at ${input.appointmentScope === 'global' ? 'any branch' : input.appointmentScope === 'hospital' ? 'this branch' : "this doctor's practice"}.`,
    );
    lines.push(
      input.booking.slotsEnabled
        ? '- Offer free appointment slots.'
        : '- Do not offer appointment slots; take a message instead.',
    );
    lines.push(
      input.booking.bookingEnabled
        ? '- Book an appointment once the caller confirms a slot.'
        : '- Do not book appointments; take a message instead.',
    );
    if (input.doctors.length > 0) {
      lines.push('', '## Doctors');
      for (const d of [...input.doctors].sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id))) {
        lines.push(`- ${d.name}${d.specialty ? `, ${d.specialty}` : ''}`);
      }
    }
    lines.push(
      '',
      '## Safety',
      '- If the caller describes an emergency, tell them to hang up and call the local emergency number now.',
      '- Never give a diagnosis; offer an appointment or a call back.',
    );
    for (const doc of input.documents) {
      const text = doc.text.replace(/\s+/g, ' ').trim();
      lines.push(
        '',
        `## Reference: ${doc.title}`,
        text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text || '(no text)',
      );
    }
    return lines.join('\n');
  }
}

/** JSON with keys in order, so the same hours always read the same. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

export function scriptGenerator(name: 'local'): ScriptGenerator {
  switch (name) {
    case 'local':
      return new LocalScriptGenerator();
  }
}
