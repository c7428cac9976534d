import release from '../api-release.json';

/**
 * The tenant API as released (`make release` writes `api-release.json`): its version, which the
 * document carries as `info.version`, and the tenants' changelog served at `/docs/changelog`.
 */

export interface ApiChange {
  version: string;
  /** `YYYY-MM-DD`, the day the gateway carrying it was released. */
  date: string;
  /** One line each, Markdown: what tenants can now do, what was deprecated and what to use instead. */
  changes: string[];
}

export const API_VERSION: string = release.version;
export const API_CHANGELOG: readonly ApiChange[] = release.changelog;

export const CHANGELOG_PATH = '/docs/changelog';

export function changelogMarkdown(changelog: readonly ApiChange[] = API_CHANGELOG): string {
  const head = [
    '# Tenant API changelog (`/api/v1`)',
    '',
    'Breaking changes are announced here at least 90 days ahead: a deprecated operation or field answers `Deprecation` and ' +
      '`Sunset` headers until its sunset, and is removed only after it.',
  ];
  const entries = changelog.map((e) =>
    [``, `## ${e.version} (${e.date})`, ``, ...e.changes.map((c) => `- ${c}`)].join('\n'),
  );
  return `${[...head, ...entries].join('\n')}\n`;
}
