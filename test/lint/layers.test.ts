/**
 * The import-boundary rule (eslint/layers.js) fails on an import that runs back up a floor or sideways between two
 * rooms, and passes the imports the code makes (`npm run lint` holds the whole of src/ to it).
 */
import path from 'node:path';
import { expect } from 'chai';
import { ESLint } from 'eslint';

const ROOT = path.resolve(import.meta.dirname, '../..');
const RULE = 'layers/imports-point-down';

async function problems(code: string, file: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: ROOT });
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  return result!.messages.filter((m) => m.ruleId === RULE).map((m) => m.message);
}

describe('import boundaries (npm run lint)', function () {
  this.timeout(60000);

  it('refuses an import back up a floor', async () => {
    const found = await problems(
      "import { buildApp } from '../http/app.ts';\nexport const a = buildApp;\n",
      'src/core/x.ts',
    );
    expect(found).to.have.length(1);
    expect(found[0]).to.include('core (floor 2) may not import http (floor 7)');
  });

  it('refuses an import sideways between two rooms of one floor', async () => {
    const found = await problems(
      "import { Robot } from '../robot/robot.ts';\nexport const a = Robot;\n",
      'src/ik/x.ts',
    );
    expect(found).to.have.length(1);
    expect(found[0]).to.include('ik (floor 4) may not import robot (floor 4)');
  });

  it('refuses a dynamic import back up, and names a room without a floor', async () => {
    expect(await problems("export const a = () => import('../server.ts');\n", 'src/sim/x.ts')).to.have.length(
      1,
    );
    const unknown = await problems(
      "import { x } from '../newroom/x.ts';\nexport const a = x;\n",
      'src/http/x.ts',
    );
    expect(unknown[0]).to.include("the room 'newroom' has no floor");
  });

  it('accepts imports down a floor and within a room', async () => {
    const code =
      "import { Clock } from '../core/clock.ts';\nimport { x } from './y.ts';\nexport const a = [Clock, x];\n";
    expect(await problems(code, 'src/sim/x.ts')).to.deep.equal([]);
  });
});
