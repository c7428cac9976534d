import { API_CHANGELOG, API_VERSION, changelogMarkdown } from './api-release';

describe('the tenant API as released', () => {
  it('carries the version of its newest changelog entry, which the changelog page shows first', () => {
    expect(API_CHANGELOG[0]?.version).toBe(API_VERSION);
    const page = changelogMarkdown();
    expect(page).toMatch(/^# Tenant API changelog/);
    expect(page.indexOf(`## ${API_VERSION} (`)).toBeGreaterThan(0);
  });

  it('lists entries newest first, each change a line', () => {
    const page = changelogMarkdown([
      { version: '1.1.0', date: '2027-01-10', changes: ['`GET /api/v1/x`: endpoint added'] },
      { version: '1.0.0', date: '2026-11-27', changes: ['First release'] },
    ]);
    expect(page.indexOf('## 1.1.0 (2027-01-10)\n\n- `GET /api/v1/x`: endpoint added')).toBeLessThan(
      page.indexOf('## 1.0.0 (2026-11-27)\n\n- First release'),
    );
  });
});
