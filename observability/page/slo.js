// Over 300 lines because the SLO page is one self-contained script served to the browser without a build step.
// The SLO page: reads the HTTP API of the Prometheus that serves it (--web.user-assets, same
// origin) and shows every SLO of the Sloth recording rules, its burn rate per window and the
// alerts firing or pending; then the API of each Alertmanager that Prometheus sends to (as
// /api/v1/alertmanagers lists them; another origin, so Alertmanager must allow this page's with
// --web.cors.origin) and shows the routed alerts: the receiver of each, or what keeps it quiet.
// Again every few seconds. Plain script, no build step, no code loaded from elsewhere.
// `?refresh=N` sets the period in seconds (default 5).
'use strict';

(function () {
  const params = new URLSearchParams(location.search);
  const REFRESH_S = Math.min(300, Math.max(1, Number(params.get('refresh')) || 5));
  const TIMEOUT_MS = Math.max(3000, REFRESH_S * 1000);
  // Served at <prefix>/user/…: the API is at <prefix>/api/v1/….
  const BASE = location.pathname.replace(/\/user(\/.*)?$/, '');
  const SLI_ERROR = /^slo:sli_error:ratio_rate(.+)$/;
  // Labels that name the SLO or describe it rather than telling its series apart.
  const SLO_META = new Set([
    '__name__',
    'sloth_id',
    'sloth_service',
    'sloth_slo',
    'sloth_window',
    'sloth_mode',
    'sloth_objective',
    'sloth_spec',
    'sloth_version',
  ]);
  const SEVERITY_RANK = { critical: 0, page: 0, high: 1, warning: 2, ticket: 2, medium: 2, info: 3, low: 3 };

  const $ = (id) => document.getElementById(id);
  let lastGood = null; // Date of the last refresh that read everything
  let headKey = null;
  const amLastGood = new Map(); // Alertmanager base URL -> { alerts, silences, at } of its last good read
  let lastAm = null; // the Watchdog as Alertmanager held it at the last refresh (null: not read yet)

  // ---------- reading Prometheus and Alertmanager ----------

  /**
   * GET `url` within TIMEOUT_MS: the response and its JSON body (undefined when it is not JSON);
   * `unreachable(err)` says why when no response could be read at all.
   */
  async function getJson(url, unreachable) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
    try {
      let res;
      try {
        res = await fetch(url, { signal: ctl.signal, cache: 'no-store', headers: { accept: 'application/json' } });
      } catch (err) {
        throw new Error(ctl.signal.aborted ? `no answer within ${TIMEOUT_MS / 1000} s` : unreachable(err));
      }
      let body;
      try {
        body = await res.json();
      } catch {
        body = undefined;
      }
      return { res, body };
    } finally {
      clearTimeout(timer);
    }
  }

  async function api(path) {
    const { res, body } = await getJson(BASE + path, (err) => `no connection to ${location.origin} (${err.message})`);
    if (body === undefined) throw new Error(`HTTP ${res.status} for ${path.split('?')[0]}`);
    if (body.status !== 'success') throw new Error(`${path.split('?')[0]}: ${body.error || `HTTP ${res.status}`}`);
    return body.data;
  }

  /** A list from Alertmanager's API v2 (`path` under its base URL). */
  async function amApi(base, path) {
    const { res, body } = await getJson(
      base + path,
      // The browser tells a refused connection and a refused CORS read apart to no script.
      () => `no answer this page may read (it is down, or does not allow ${location.origin} by --web.cors.origin)`,
    );
    if (!res.ok) throw new Error(`HTTP ${res.status} for ${path}`);
    if (!Array.isArray(body)) throw new Error(`${path} did not answer a list`);
    return body;
  }

  /** The Alertmanagers Prometheus sends to: the base URL of each (its alerts are at /api/v2/alerts). */
  function alertmanagersOf(data) {
    const bases = [];
    for (const am of (data && data.activeAlertmanagers) || []) {
      let u;
      try {
        u = new URL(am.url);
      } catch {
        continue;
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') continue;
      const base = `${u.origin}${u.pathname.replace(/\/api\/v2\/alerts\/?$/, '')}`;
      if (!bases.includes(base)) bases.push(base);
    }
    return bases;
  }

  /** What one Alertmanager holds (the same path Prometheus posts to), and its silences when one mutes an alert. */
  async function readAlertmanager(base) {
    const alerts = await amApi(base, '/api/v2/alerts');
    const silenced = alerts.some((a) => a.status && (a.status.silencedBy || []).length > 0);
    // Who set a silence and why; without them the silence's id is still said.
    const silences = silenced ? await amApi(base, '/api/v2/silences').catch(() => []) : [];
    return { alerts, silences };
  }

  const query = (expr) => api(`/api/v1/query?query=${encodeURIComponent(expr)}`).then((d) => d.result || []);

  // ---------- small helpers ----------

  const UNIT_S = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };
  /** Seconds in a Prometheus duration such as 5m, 1h30m or 30d; Infinity when it is not one. */
  function durationS(text) {
    const parts = String(text).match(/\d+(ms|s|m|h|d|w|y)/g);
    if (!parts || parts.join('') !== text) return Infinity;
    return parts.reduce((sum, p) => {
      const [, n, u] = p.match(/^(\d+)(ms|s|m|h|d|w|y)$/);
      return sum + Number(n) * UNIT_S[u];
    }, 0);
  }

  const num = (sample) => (sample ? Number.parseFloat(sample.value[1]) : NaN);
  const sloKey = (l) => `${l.sloth_service || ''}/${l.sloth_slo || ''}`;
  function extraLabels(l) {
    const out = {};
    for (const k of Object.keys(l).sort()) if (!SLO_META.has(k)) out[k] = l[k];
    return out;
  }
  const labelsText = (o) =>
    Object.entries(o)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ');

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  const fmt = (v, digits) =>
    v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0, useGrouping: false });
  const pct = (v, digits) => `${fmt(v * 100, digits)}%`;
  function burnText(v) {
    if (!Number.isFinite(v)) return null;
    const a = Math.abs(v);
    return `${v.toLocaleString('en-US', { maximumFractionDigits: a >= 100 ? 0 : a >= 10 ? 1 : 2, minimumFractionDigits: a >= 100 ? 0 : a >= 10 ? 1 : 2, useGrouping: false })}×`;
  }
  const clock = (d) => d.toLocaleTimeString('en-GB', { hour12: false });
  function timeEl(d, text) {
    return el('time', { datetime: d.toISOString(), title: d.toString(), text: text || clock(d) });
  }
  function ago(d) {
    const s = Math.max(0, Math.round((Date.now() - d.getTime()) / 1000));
    if (s < 90) return `${s} s ago`;
    if (s < 5400) return `${Math.round(s / 60)} min ago`;
    return `${Math.round(s / 3600)} h ago`;
  }
  /**
   * A runbook address as a link target: a section of the project's docs (docs/….md#anchor, as the
   * rules write them) opens in the runbook viewer beside this page; otherwise http(s) only (never
   * javascript: and the like).
   */
  function runbookHref(url) {
    if (/^docs\/(?:[A-Za-z0-9_-]+\/)*[A-Za-z0-9_.-]+\.md(#[A-Za-z0-9_-]*)?$/.test(url)) {
      const [doc, hash] = url.split('#');
      return `runbook.html?doc=${encodeURIComponent(doc)}${hash ? `#${hash}` : ''}`;
    }
    try {
      const u = new URL(url, location.href);
      return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
    } catch {
      return null;
    }
  }

  // ---------- building the model ----------

  function model(rules, samples, alerts) {
    // Windows: whatever slo:sli_error:ratio_rate<window> rules exist, shortest first.
    const windows = new Set();
    const slos = new Map(); // sloKey -> { service, slo, labels (of the SLO itself), windows:Set, objective, rows:Map }
    const sloOf = (l) => {
      const key = sloKey(l);
      if (!slos.has(key))
        slos.set(key, {
          key,
          service: l.sloth_service || '',
          slo: l.sloth_slo || '',
          labels: {},
          windows: new Set(),
          objective: NaN,
          budget: NaN,
          rows: new Map(),
        });
      return slos.get(key);
    };
    for (const g of rules.groups || []) {
      for (const r of g.rules || []) {
        if (r.type && r.type !== 'recording') continue;
        const l = r.labels || {};
        if (!l.sloth_slo && !l.sloth_service) continue;
        const s = sloOf(l);
        const m = r.name.match(SLI_ERROR);
        if (m) {
          windows.add(m[1]);
          s.windows.add(m[1]);
        }
        if (r.name === 'slo:objective:ratio') s.labels = extraLabels(l);
      }
    }
    const rowOf = (s, l) => {
      const extra = extraLabels(l);
      const key = JSON.stringify(extra);
      if (!s.rows.has(key))
        s.rows.set(key, { extra, windowErr: new Map(), current: NaN, periodBurn: NaN, remaining: NaN, alerts: [] });
      return s.rows.get(key);
    };
    for (const sample of samples) {
      const l = sample.metric;
      if (!l.sloth_slo && !l.sloth_service) continue;
      const name = l.__name__;
      const s = sloOf(l);
      const v = num(sample);
      const m = name.match(SLI_ERROR);
      if (m) {
        windows.add(m[1]);
        s.windows.add(m[1]);
        rowOf(s, l).windowErr.set(m[1], v);
      } else if (name === 'slo:objective:ratio') s.objective = v;
      else if (name === 'slo:error_budget:ratio') s.budget = v;
      else if (name === 'sloth_slo_info' && Number.isNaN(s.objective) && l.sloth_objective)
        s.objective = Number(l.sloth_objective) / 100;
      else if (name === 'slo:current_burn_rate:ratio') rowOf(s, l).current = v;
      else if (name === 'slo:period_burn_rate:ratio') rowOf(s, l).periodBurn = v;
      else if (name === 'slo:period_error_budget_remaining:ratio') rowOf(s, l).remaining = v;
    }
    const ordered = [...windows].sort((a, b) => durationS(a) - durationS(b) || a.localeCompare(b));

    const active = alerts.filter((a) => a.state === 'firing' || a.state === 'pending');
    const rows = [];
    for (const s of [...slos.values()].sort((a, b) => a.key.localeCompare(b.key))) {
      if (Number.isNaN(s.budget) && Number.isFinite(s.objective)) s.budget = 1 - s.objective;
      // An SLO with no measured series yet still gets its row.
      if (s.rows.size === 0) rowOf(s, s.labels);
      const shortest = ordered.find((w) => s.windows.has(w));
      for (const row of s.rows.values()) {
        row.slo = s;
        // Labels that tell this row apart from the SLO's other rows (e.g. a route_group of the SLI).
        row.shown = Object.fromEntries(Object.entries(row.extra).filter(([k, v]) => s.labels[k] !== v));
        row.windowBurn = new Map([...row.windowErr].map(([w, e]) => [w, s.budget > 0 ? e / s.budget : NaN]));
        if (Number.isNaN(row.current) && shortest) row.current = row.windowBurn.get(shortest) ?? NaN;
        row.alerts = active.filter((a) => {
          const l = a.labels || {};
          if (l.sloth_service !== s.service || l.sloth_slo !== s.slo) return false;
          return Object.entries(row.extra).every(([k, v]) => l[k] === undefined || l[k] === v);
        });
        row.shortest = shortest;
        if (row.alerts.length > 0 || row.current > 1) row.status = 'burning';
        else if (Number.isFinite(row.current)) row.status = 'ok';
        else row.status = 'nodata';
        rows.push(row);
      }
    }
    return { windows: ordered, rows, alerts: active };
  }

  // ---------- rendering ----------

  const STATUS = {
    ok: { symbol: '✓', text: 'OK' },
    burning: { symbol: '▲', text: 'Burning' },
    nodata: { symbol: '–', text: 'No data' },
  };

  function renderHead(windows) {
    const key = windows.join('|');
    if (key === headKey) return;
    headKey = key;
    const span = windows.length > 0 ? 2 : 1;
    const top = el(
      'tr',
      null,
      el('th', { scope: 'col', rowspan: span, text: 'SLO' }),
      el('th', { scope: 'col', rowspan: span, text: 'Objective' }),
      el('th', { scope: 'col', rowspan: span, text: 'Status' }),
      el('th', { scope: 'col', rowspan: span, text: 'Current burn rate' }),
      el('th', { scope: 'col', rowspan: span, text: 'Error budget left' }),
      windows.length > 0
        ? el('th', { scope: 'colgroup', colspan: windows.length, text: 'Burn rate over the last…' })
        : null,
      el('th', { scope: 'col', rowspan: span, text: 'Alerts' }),
    );
    const head = $('slo-head');
    head.replaceChildren(top);
    if (windows.length > 0)
      head.append(
        el(
          'tr',
          null,
          ...windows.map((w) =>
            el('th', { scope: 'col', 'data-testid': 'slo-window-heading', 'data-window': w, text: w }),
          ),
        ),
      );
  }

  /** A figure not measured: a dash to the eye, "no data" to a screen reader. */
  const noData = (text = 'no data') => [
    el('span', { 'aria-hidden': 'true', text: '–' }),
    el('span', { class: 'visually-hidden', text }),
  ];

  function burnCell(testid, v, extra) {
    const t = burnText(v);
    if (t === null)
      return el('td', { 'data-testid': testid, class: 'num nodata', title: 'no data', ...extra }, ...noData());
    return el(
      'td',
      { 'data-testid': testid, class: v > 1 ? 'num hot' : 'num', ...extra },
      t,
      v > 1 ? el('span', { class: 'visually-hidden', text: ' (above 1×)' }) : null,
    );
  }

  function renderSlos(m) {
    renderHead(m.windows);
    const body = $('slo-body');
    if (m.rows.length === 0) {
      body.replaceChildren(
        el(
          'tr',
          null,
          el('td', {
            colspan: 6 + Math.max(1, m.windows.length),
            'data-testid': 'slo-empty',
            text: 'Prometheus evaluates no SLO rules (no slo:* recording rules loaded).',
          }),
        ),
      );
      return;
    }
    body.replaceChildren(
      ...m.rows.map((row) => {
        const s = row.slo;
        const st = STATUS[row.status];
        const name = el(
          'th',
          { scope: 'row', 'data-testid': 'slo-name' },
          el('span', { class: 'slo', text: s.slo || '(unnamed)' }),
          el('span', { class: 'service', text: s.service }),
          Object.keys(row.shown).length > 0
            ? el('span', { class: 'labels', 'data-testid': 'slo-labels', text: labelsText(row.shown) })
            : null,
        );
        const objective = el(
          'td',
          { 'data-testid': 'slo-objective', class: 'num' },
          Number.isFinite(s.objective) ? pct(s.objective, 4) : 'unknown',
        );
        let detail = '';
        if (row.status === 'burning') {
          detail =
            row.alerts.length > 0
              ? row.alerts.map((a) => `${severityOf(a) || 'an'} alert ${a.state}`).join(', ')
              : 'budget spent faster than allowed';
        } else if (row.status === 'nodata')
          detail = row.shortest ? `no traffic measured over ${row.shortest}` : 'no SLI rules';
        const status = el(
          'td',
          { 'data-testid': 'slo-status', class: `status ${row.status}` },
          el(
            'span',
            { class: 'badge', 'data-testid': 'slo-status-text' },
            el('span', { 'aria-hidden': 'true', text: `${st.symbol} ` }),
            st.text,
          ),
          detail ? el('span', { class: 'detail', text: detail }) : null,
        );
        const remaining = Number.isFinite(row.remaining)
          ? el(
              'td',
              { 'data-testid': 'slo-budget', class: row.remaining <= 0 ? 'num hot' : 'num' },
              row.remaining <= 0 ? `exhausted (${pct(row.remaining, 1)})` : pct(row.remaining, 1),
            )
          : el('td', { 'data-testid': 'slo-budget', class: 'num nodata', title: 'no data' }, ...noData());
        const windows = m.windows.map((w) =>
          s.windows.has(w)
            ? burnCell('slo-window-burn', row.windowBurn.get(w), { 'data-window': w })
            : el(
                'td',
                {
                  'data-testid': 'slo-window-burn',
                  'data-window': w,
                  class: 'num nodata',
                  title: 'not computed for this SLO',
                },
                ...noData('not computed for this SLO'),
              ),
        );
        const alerts = el(
          'td',
          { 'data-testid': 'slo-alerts' },
          row.alerts.length === 0
            ? 'none'
            : row.alerts
                .map((a) => `${a.labels.alertname}${severityOf(a) ? ` ${severityOf(a)}` : ''} (${a.state})`)
                .join(', '),
        );
        return el(
          'tr',
          {
            'data-testid': 'slo-row',
            'data-service': s.service,
            'data-slo': s.slo,
            'data-labels': labelsText(row.shown),
            'data-status': row.status,
            class: row.status,
          },
          name,
          objective,
          status,
          burnCell('slo-current-burn', row.current),
          remaining,
          ...windows,
          alerts,
        );
      }),
    );
  }

  function severityOf(a) {
    return (a.labels && (a.labels.severity || a.labels.sloth_severity)) || '';
  }

  function renderAlerts(alerts) {
    const sorted = [...alerts].sort(
      (a, b) =>
        (a.state === 'firing' ? 0 : 1) - (b.state === 'firing' ? 0 : 1) ||
        (SEVERITY_RANK[severityOf(a)] ?? 9) - (SEVERITY_RANK[severityOf(b)] ?? 9) ||
        String(a.labels.alertname).localeCompare(String(b.labels.alertname)),
    );
    $('no-alerts').hidden = sorted.length > 0;
    $('alerts-table').hidden = sorted.length === 0;
    $('alerts-body').replaceChildren(
      ...sorted.map((a) => {
        const l = a.labels || {};
        const ann = a.annotations || {};
        const name = l.alertname || '(unnamed)';
        const href = ann.runbook_url ? runbookHref(ann.runbook_url) : null;
        const runbook = el(
          'td',
          { 'data-testid': 'alert-runbook' },
          href
            ? el(
                'a',
                { href, 'data-testid': 'alert-runbook-link', rel: 'noopener noreferrer' },
                'Runbook',
                el('span', { class: 'visually-hidden', text: ` for ${name}` }),
              )
            : ann.runbook_url || 'none',
        );
        const since = a.activeAt ? new Date(a.activeAt) : null;
        const firing = a.state === 'firing';
        return el(
          'tr',
          { 'data-testid': 'alert-row', 'data-alertname': name, 'data-state': a.state, class: a.state },
          el('th', { scope: 'row', 'data-testid': 'alert-name', text: name }),
          el(
            'td',
            { 'data-testid': 'alert-state', class: `state ${a.state}` },
            el('span', { 'aria-hidden': 'true', text: firing ? '● ' : '○ ' }),
            firing ? 'Firing' : 'Pending',
          ),
          el('td', { 'data-testid': 'alert-severity', text: severityOf(a) || '—' }),
          el('td', {
            'data-testid': 'alert-slo',
            text: l.sloth_slo ? `${l.sloth_service ? `${l.sloth_service}/` : ''}${l.sloth_slo}` : '—',
          }),
          el('td', { 'data-testid': 'alert-summary', text: ann.summary || ann.title || ann.description || '—' }),
          runbook,
          el(
            'td',
            { 'data-testid': 'alert-since' },
            since && !Number.isNaN(since.getTime()) ? timeEl(since, `${clock(since)} (${ago(since)})`) : '—',
          ),
        );
      }),
    );
  }

  const isWatchdog = (a) => Boolean(a.labels && a.labels.alertname === 'Watchdog');

  /**
   * The Watchdog as Prometheus and Alertmanager see it. `am.state`: 'none' (Prometheus sends to no
   * Alertmanager), 'unknown' (none could be read), else whether one holds it ('true', 'false'),
   * with its receivers; `am` null: Alertmanager not read yet.
   */
  function renderWatchdog(firing, am) {
    const w = $('watchdog');
    w.dataset.firing = String(firing);
    if (am) w.dataset.alertmanager = am.state;
    else delete w.dataset.alertmanager;
    const to = am && am.receivers.length > 0 ? ` (routed to ${am.receivers.join(', ')})` : '';
    let text;
    if (!firing) {
      text =
        'The Watchdog is not firing: the cause rules are not loaded or not evaluated, and no alert of theirs can fire.';
      if (am && am.state === 'true') text += ` Alertmanager still holds one${to}, until it expires.`;
    } else if (!am)
      text =
        'Alerting pipeline: the Watchdog fires, so the rules are evaluated and alerts are sent on to Alertmanager.';
    else if (am.state === 'true')
      text = `Alerting pipeline: the Watchdog fires, so the rules are evaluated, and Alertmanager holds it${to}, so alerts reach Alertmanager and are routed.`;
    else if (am.state === 'false')
      text =
        'The Watchdog fires in Prometheus but Alertmanager does not hold it: alerts are not reaching Alertmanager.';
    else if (am.state === 'none')
      text = 'The Watchdog fires, so the rules are evaluated, but Prometheus sends alerts to no Alertmanager.';
    else
      text =
        'The Watchdog fires, so the rules are evaluated; whether alerts reach Alertmanager is unknown: it could not be read.';
    w.textContent = text;
  }

  // ---------- the routed alerts (Alertmanager's view) ----------

  const whereOf = (l) => (l.sloth_slo ? `${l.sloth_service ? `${l.sloth_service}/` : ''}${l.sloth_slo}` : l.job || '');
  /** An alert as a person names it: "CallChargeSLOBurn page (voiceapi/call-charge)". */
  function alertTitle(a) {
    const l = a.labels || {};
    const sev = severityOf(a);
    const where = whereOf(l);
    return `${l.alertname || '(unnamed)'}${sev ? ` ${sev}` : ''}${where ? ` (${where})` : ''}`;
  }

  /** Each alert Alertmanager holds (the Watchdog aside): where it goes, or what keeps it quiet. */
  function routedRows(alerts, silences) {
    const byFingerprint = new Map(alerts.map((a) => [a.fingerprint, a]));
    const silenceById = new Map(silences.map((x) => [x.id, x]));
    const rank = { active: 0, unprocessed: 1, inhibited: 2, silenced: 3, muted: 4, suppressed: 5 };
    return alerts
      .filter((a) => !isWatchdog(a))
      .map((a) => {
        const st = a.status || {};
        const inhibitedBy = (st.inhibitedBy || []).map((fp) => byFingerprint.get(fp) || { fingerprint: fp });
        const silencedBy = (st.silencedBy || []).map((id) => silenceById.get(id) || { id });
        const mutedBy = st.mutedBy || [];
        let state = 'unprocessed';
        if (st.state === 'active') state = 'active';
        else if (st.state === 'suppressed')
          state =
            inhibitedBy.length > 0
              ? 'inhibited'
              : silencedBy.length > 0
                ? 'silenced'
                : mutedBy.length > 0
                  ? 'muted'
                  : 'suppressed';
        const receivers = (a.receivers || []).map((r) => String(r.name));
        return { a, state, receivers, inhibitedBy, silencedBy, mutedBy };
      })
      .sort(
        (x, y) =>
          rank[x.state] - rank[y.state] ||
          (SEVERITY_RANK[severityOf(x.a)] ?? 9) - (SEVERITY_RANK[severityOf(y.a)] ?? 9) ||
          String(x.a.labels && x.a.labels.alertname).localeCompare(String(y.a.labels && y.a.labels.alertname)),
      );
  }

  /** Why an alert is quiet, in words: which alert inhibits it, which silence, which time interval. */
  function quietText(r) {
    const parts = [];
    if (r.inhibitedBy.length > 0)
      parts.push(
        `Inhibited by ${r.inhibitedBy
          .map((src) => (src.labels ? alertTitle(src) : `an alert no longer held (${src.fingerprint})`))
          .join(', ')}`,
      );
    if (r.silencedBy.length > 0)
      parts.push(
        `Silenced by ${r.silencedBy
          .map((x) =>
            x.createdBy !== undefined
              ? `${x.createdBy || 'someone'}${x.comment ? `: ${x.comment}` : ''}${x.endsAt ? ` (until ${clock(new Date(x.endsAt))})` : ''}`
              : `silence ${x.id}`,
          )
          .join('; ')}`,
      );
    if (r.mutedBy.length > 0) parts.push(`Muted by time interval ${r.mutedBy.join(', ')}`);
    return parts.join('; ') || 'Suppressed';
  }

  const ROUTED_STATE = {
    active: { symbol: '● ', text: (r) => `Notifying ${r.receivers.join(' and ') || 'no receiver'}` },
    unprocessed: { symbol: '… ', text: () => 'Not processed yet: Alertmanager has just received it' },
  };

  function routedRow(r) {
    const l = r.a.labels || {};
    const s = ROUTED_STATE[r.state] || { symbol: '○ ', text: quietText };
    const since = r.a.startsAt ? new Date(r.a.startsAt) : null;
    return el(
      'tr',
      {
        'data-testid': 'routed-row',
        'data-alert': l.alertname || '',
        'data-severity': severityOf(r.a),
        'data-slo': l.sloth_slo || '',
        'data-state': r.state,
        'data-receiver': r.receivers.join(' '),
        'data-inhibited-by': r.inhibitedBy.map((src) => (src.labels && src.labels.alertname) || '').join(' '),
        class: r.state,
      },
      el('th', { scope: 'row', 'data-testid': 'routed-name', text: l.alertname || '(unnamed)' }),
      el('td', { 'data-testid': 'routed-severity', text: severityOf(r.a) || '—' }),
      el('td', { 'data-testid': 'routed-slo', text: whereOf(l) || '—' }),
      el('td', { 'data-testid': 'routed-receiver', text: r.receivers.join(', ') || '—' }),
      el(
        'td',
        { 'data-testid': 'routed-state', class: `state ${r.state}` },
        el('span', { 'aria-hidden': 'true', text: s.symbol }),
        s.text(r),
      ),
      el(
        'td',
        { 'data-testid': 'routed-since' },
        since && !Number.isNaN(since.getTime()) ? timeEl(since, `${clock(since)} (${ago(since)})`) : '—',
      ),
    );
  }

  function countsText(rows) {
    const n = {};
    for (const r of rows) n[r.state] = (n[r.state] || 0) + 1;
    const words = {
      active: 'notifying a receiver',
      inhibited: 'inhibited',
      silenced: 'silenced',
      muted: 'muted',
      suppressed: 'suppressed',
      unprocessed: 'not processed yet',
    };
    return Object.keys(words)
      .filter((k) => n[k])
      .map((k) => `${n[k]} ${words[k]}`)
      .join(', ');
  }

  /** One Alertmanager: what it holds (or held at its last good read) and, when it could not be read, why. */
  function alertmanagerBlock(read, now) {
    const held = read.alerts ? routedRows(read.alerts, read.silences) : null;
    const watchdogOnly = read.alerts && read.alerts.length > 0 && held.length === 0;
    const verb = read.error ? 'Held, at the last good read,' : 'Holds';
    let summary;
    if (!held) summary = 'Not read yet.';
    else if (held.length === 0) summary = `${verb} no alert${watchdogOnly ? ' but the Watchdog' : ''}.`;
    else summary = `${verb} ${held.length} alert${held.length === 1 ? '' : 's'}: ${countsText(held)}.`;
    return el(
      'div',
      { 'data-testid': 'alertmanager', 'data-url': read.base, 'data-stale': read.error ? 'true' : null },
      el('h3', { text: `Alertmanager ${read.base}` }),
      el('p', { 'data-testid': 'alertmanager-summary', text: summary }),
      read.error
        ? el(
            'p',
            { class: 'banner', 'data-testid': 'routed-error', role: 'alert' },
            el('strong', { text: `Alertmanager at ${read.base} could not be read: ` }),
            `${read.error.message}. Tried at `,
            timeEl(now),
            `; trying again every ${REFRESH_S} s. `,
            read.at
              ? el('span', null, 'The routed alerts below are from the last good read at ', timeEl(read.at), '.')
              : 'Nothing has been read from it yet.',
          )
        : null,
      held && held.length > 0
        ? el(
            'table',
            { 'data-testid': 'routed-table' },
            el('caption', {
              text: `The alerts Alertmanager ${read.base} holds, those notifying a receiver first: the receiver each goes to, or what keeps it quiet.`,
            }),
            el(
              'thead',
              null,
              el(
                'tr',
                null,
                ...['Alert', 'Severity', 'SLO or job', 'Receiver', 'State', 'Active since'].map((h) =>
                  el('th', { scope: 'col', text: h }),
                ),
              ),
            ),
            el('tbody', null, ...held.map(routedRow)),
          )
        : null,
    );
  }

  /**
   * Reads every Alertmanager Prometheus sends to, each on its own (one not answering hides none of
   * the others, nor Prometheus's figures), and shows them; the Watchdog as Alertmanager holds it.
   */
  async function refreshRouted(bases, now) {
    const reads = await Promise.all(
      bases.map(async (base) => {
        try {
          const got = await readAlertmanager(base);
          amLastGood.set(base, { ...got, at: now });
          return { base, ...got, at: now, error: null };
        } catch (err) {
          const last = amLastGood.get(base);
          return {
            base,
            alerts: last ? last.alerts : null,
            silences: last ? last.silences : [],
            at: last ? last.at : null,
            error: err instanceof Error ? err : new Error(String(err)),
          };
        }
      }),
    );
    for (const base of [...amLastGood.keys()]) if (!bases.includes(base)) amLastGood.delete(base);
    const section = $('routed');
    if (bases.length === 0)
      section.replaceChildren(
        el('p', {
          'data-testid': 'routed-none',
          class: 'warn',
          text: 'No Alertmanager configured: alerts are not routed to anyone.',
        }),
      );
    else section.replaceChildren(...reads.map((r) => alertmanagerBlock(r, now)));

    const fresh = reads.filter((r) => !r.error);
    const watchdogs = fresh.flatMap((r) => r.alerts.filter(isWatchdog));
    const receivers = [...new Set(watchdogs.flatMap((a) => (a.receivers || []).map((x) => String(x.name))))];
    let state = 'unknown';
    if (bases.length === 0) state = 'none';
    else if (watchdogs.length > 0) state = 'true';
    else if (fresh.length > 0) state = 'false';
    return { state, receivers };
  }

  function renderRefreshed(now) {
    const r = $('last-refresh');
    r.dataset.refreshedAt = String(now.getTime());
    r.replaceChildren('Last refreshed ', timeEl(now), ` · every ${REFRESH_S} s`);
  }

  function renderError(err, now) {
    const banner = $('error-banner');
    banner.replaceChildren(
      el('strong', { text: 'Prometheus is not answering. ' }),
      `${err.message}. Tried at `,
      timeEl(now),
      `; trying again every ${REFRESH_S} s. `,
      lastGood
        ? el('span', null, 'The figures below are from the last good refresh at ', timeEl(lastGood), '.')
        : 'Nothing has been read yet.',
    );
    banner.hidden = false;
    document.body.dataset.stale = 'true';
  }

  // ---------- the loop ----------

  async function refresh() {
    const now = new Date();
    let watchdog;
    let alertmanagers;
    try {
      const [rules, samples, alerts, ams] = await Promise.all([
        api('/api/v1/rules?type=record'),
        query('{__name__=~"slo:.+|sloth_slo_info"}'),
        api('/api/v1/alerts').then((d) => d.alerts || []),
        api('/api/v1/alertmanagers'),
      ]);
      // The Watchdog always fires (it proves the pipeline alive): shown on its own line, not as an alert.
      watchdog = alerts.some((a) => isWatchdog(a) && a.state === 'firing');
      alertmanagers = alertmanagersOf(ams);
      const m = model(
        rules,
        samples,
        alerts.filter((a) => !isWatchdog(a)),
      );
      renderSlos(m);
      renderAlerts(m.alerts);
      renderWatchdog(watchdog, lastAm);
      lastGood = now;
      renderRefreshed(now);
      $('error-banner').hidden = true;
      delete document.body.dataset.stale;
      const burning = m.rows.filter((r) => r.status === 'burning').length;
      document.title = burning > 0 ? `▲ ${burning} burning · voiceapi SLOs` : 'voiceapi SLOs';
    } catch (err) {
      renderError(err instanceof Error ? err : new Error(String(err)), now);
      document.title = '⚠ Prometheus not answering · voiceapi SLOs';
      return;
    }
    // Alertmanager after Prometheus has been shown: its answer, or its silence, never holds those figures up.
    try {
      lastAm = await refreshRouted(alertmanagers, now);
    } catch (err) {
      lastAm = { state: 'unknown', receivers: [] };
      $('routed').replaceChildren(
        el('p', { class: 'banner', 'data-testid': 'routed-error', role: 'alert', text: `Routed alerts: ${err}` }),
      );
    }
    renderWatchdog(watchdog, lastAm);
  }

  async function loop() {
    await refresh();
    setTimeout(loop, REFRESH_S * 1000);
  }

  $('source').textContent = `from Prometheus at ${location.origin}${BASE}`;
  loop();
})();
