/**
 * `make sdk`: the tenant API's OpenAPI document, as the gateway serves it, into the TypeScript SDK
 * (`sdk/typescript/openapi.json`) and its types (`src/generated/api.ts`, by openapi-typescript).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { servedDocument } from './served-document';

const ROOT = path.resolve(__dirname, '..');
const SDK = path.join(ROOT, 'sdk/typescript');

async function main(): Promise<void> {
  writeFileSync(path.join(SDK, 'openapi.json'), `${JSON.stringify(await servedDocument(), null, 2)}\n`);
  const types = execFileSync(
    process.execPath,
    [path.join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'), path.join(SDK, 'openapi.json')],
    { encoding: 'utf8' },
  );
  writeFileSync(path.join(SDK, 'src/generated/api.ts'), types);
  process.stdout.write('sdk/typescript: openapi.json and src/generated/api.ts written\n');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
