/**
 * The container and the Kubernetes manifests: every manifest valid against the Kubernetes API schemas
 * (kubernetes-models), their flags ones the CLIs define, their ports and probe paths ones the server serves; the
 * Dockerfile multi-stage, non-root, with a HEALTHCHECK on /healthz and no dev dependency in its final stage. No
 * Docker engine runs here: the Dockerfile is checked by its structure.
 */
import { expect } from 'chai';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Service } from 'kubernetes-models/v1/Service';
import { Classroom } from '../../src/classroom/classroom.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DIR = path.join(ROOT, 'deploy/kubernetes');

/** The long flags a commander program defines in `file` (`.option('--x <v>'...`, `new Option('--x'...`). */
function flagsOf(file: string): Set<string> {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  return new Set(
    [...text.matchAll(/(?:\.option|new Option)\(\s*'(?:-\w, )?(--[a-z][a-z-]*)/g)].map((m) => m[1]!),
  );
}

/** `--x=v` and `--x v` flags of an argument list (or of a shell line split on spaces). */
function usedFlags(args: readonly string[]): string[] {
  return args
    .flatMap((a) => a.split(/\s+/))
    .filter((a) => a.startsWith('--'))
    .map((a) => a.split('=')[0]!);
}

const MODELS: Record<string, { validate(): void } & (new (doc: never) => { validate(): void })> = {
  'apps/v1 StatefulSet': StatefulSet as never,
  'batch/v1 Job': Job as never,
  'policy/v1 PodDisruptionBudget': PodDisruptionBudget as never,
  'v1 Service': Service as never,
};

interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
}
interface Container {
  args?: string[];
  command?: string[];
  ports?: { name: string; containerPort: number }[];
  livenessProbe?: { httpGet: { path: string; port: string } };
  readinessProbe?: { httpGet: { path: string; port: string } };
  startupProbe?: { httpGet: { path: string; port: string } };
  resources?: { requests?: Record<string, string> };
}

function manifests(): Doc[] {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) =>
      parseAllDocuments(readFileSync(path.join(DIR, f), 'utf8')).map((d) => {
        expect(d.errors, f).to.deep.equal([]);
        return d.toJS() as Doc;
      }),
    );
}

const containersOf = (doc: Doc) =>
  (doc.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers;

describe('deploy: the Dockerfile and the Kubernetes manifests', function () {
  this.timeout(60000);
  const docs = manifests();
  const serverFlags = flagsOf('src/main.ts');
  const scenarioFlags = flagsOf('src/scenario/cli.ts');

  it('reads the CLIs flags from their definitions', () => {
    for (const f of ['--classroom', '--port', '--host', '--records-dir', '--robot'])
      expect(serverFlags).to.include(f);
    for (const f of ['--shard', '--json', '--jobs', '--merge']) expect(scenarioFlags).to.include(f);
  });

  it('every manifest is valid against the Kubernetes API schemas', () => {
    expect(docs.map((d) => d.kind).sort()).to.deep.equal([
      'Job',
      'PodDisruptionBudget',
      'Service',
      'Service',
      'StatefulSet',
    ]);
    for (const doc of docs) {
      const Model = MODELS[`${doc.apiVersion} ${doc.kind}`];
      expect(Model, `${doc.apiVersion} ${doc.kind}`).to.not.equal(undefined);
      expect(() => new Model!(doc as never).validate(), doc.metadata.name).to.not.throw();
    }
    // The validation does catch a mistake.
    const broken = structuredClone(docs.find((d) => d.kind === 'StatefulSet')!);
    containersOf(broken)[0]!.ports![0]!.containerPort = 'http' as never;
    expect(() => new StatefulSet(broken as never).validate()).to.throw(/containerPort/);
  });

  it("the StatefulSet's flags, port, probes and volumes are ones the server has", async () => {
    const set = docs.find((d) => d.kind === 'StatefulSet')!;
    const [c] = containersOf(set);
    for (const flag of usedFlags(c!.args!)) expect(serverFlags, flag).to.include(flag);
    const arg = (flag: string) => c!.args!.find((a) => a.startsWith(`${flag}=`))?.split('=')[1];
    const http = c!.ports!.find((p) => p.name === 'http')!;
    expect(http.containerPort).to.equal(Number(arg('--port')));
    const probes = [c!.livenessProbe!, c!.readinessProbe!, c!.startupProbe!];
    for (const p of probes) expect(p.httpGet.port).to.equal('http');
    expect(c!.livenessProbe!.httpGet.path).to.equal('/healthz');
    expect(c!.readinessProbe!.httpGet.path).to.equal('/readyz');
    expect(c!.resources!.requests).to.have.keys('cpu', 'memory');
    const claims = (set.spec as { volumeClaimTemplates: { metadata: { name: string } }[] })
      .volumeClaimTemplates;
    const mounts = (c as { volumeMounts: { name: string; mountPath: string }[] }).volumeMounts;
    expect(mounts.find((m) => m.name === claims[0]!.metadata.name)?.mountPath).to.equal(arg('--records-dir'));
    // The probe paths answer on a classroom's main port (200 once every twin is ready).
    const room = await Classroom.create({
      twins: [{ name: 'ana', robot: 'ergo-jr', port: 0 }],
      speed: 'manual',
      recordsDir: path.join(ROOT, 'tmp', 'deploy-test-records'),
    });
    try {
      await room.loaded();
      for (const p of new Set(probes.map((x) => x.httpGet.path)))
        expect((await room.app.inject({ url: p })).statusCode, p).to.equal(200);
    } finally {
      await room.close();
    }
  });

  it('the Services and the PodDisruptionBudget select the StatefulSet and reach its named port', () => {
    const set = docs.find((d) => d.kind === 'StatefulSet')!;
    const labels = (set.spec as { template: { metadata: { labels: Record<string, string> } } }).template
      .metadata.labels;
    const services = docs.filter((d) => d.kind === 'Service');
    expect(services.map((s) => s.metadata.name)).to.include(
      (set.spec as { serviceName: string }).serviceName,
    );
    for (const s of services) {
      expect(labels).to.deep.include(s.spec.selector as Record<string, string>);
      for (const p of s.spec.ports as { targetPort: string }[]) expect(p.targetPort).to.equal('http');
    }
    const pdb = docs.find((d) => d.kind === 'PodDisruptionBudget')!;
    expect(labels).to.deep.include(
      (pdb.spec.selector as { matchLabels: Record<string, string> }).matchLabels,
    );
  });

  it('the indexed Job runs shard i+1 of its completions, with flags the scenario CLI has', () => {
    const job = docs.find((d) => d.kind === 'Job')!;
    expect(job.spec.completionMode).to.equal('Indexed');
    const [c] = containersOf(job);
    const line = c!.command!.join(' ');
    expect(line).to.contain('src/scenario/cli.ts');
    const cliArgs = line.slice(line.indexOf('src/scenario/cli.ts')).split(/\s+/);
    for (const flag of usedFlags(cliArgs)) expect(scenarioFlags, flag).to.include(flag);
    expect(line).to.contain(`--shard=$((JOB_COMPLETION_INDEX + 1))/${job.spec.completions as number}`);
  });

  it('the Dockerfile: multi-stage, production dependencies only, non-root, HEALTHCHECK on /healthz', () => {
    const text = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    const lines = text
      .replace(/\\\n\s*/g, ' ')
      .split('\n')
      .filter((l) => l.trim() && !l.startsWith('#'));
    const stages: { name: string; lines: string[] }[] = [];
    for (const l of lines) {
      const from = /^FROM\s+\S+(?:\s+AS\s+(\S+))?/i.exec(l);
      if (from) stages.push({ name: from[1] ?? String(stages.length), lines: [] });
      else stages.at(-1)!.lines.push(l);
    }
    expect(stages.length).to.be.greaterThanOrEqual(2);
    const final = stages.at(-1)!;
    const deps = stages.find((s) => s.lines.some((l) => /npm ci\b.*--omit=dev/.test(l)));
    expect(deps, 'a stage installs the production dependencies only').to.not.equal(undefined);
    expect(final.lines.some((l) => l.startsWith(`COPY --from=${deps!.name} /app/node_modules`))).to.equal(
      true,
    );
    expect(
      final.lines.some((l) => /^RUN npm (ci|install)\b/.test(l)),
      'no install in the final stage',
    ).to.equal(false);
    const user = final.lines.find((l) => l.startsWith('USER '));
    expect(user).to.not.equal(undefined);
    expect(user!.split(/\s+/)[1]).to.not.match(/^(root|0)$/);
    expect(final.lines.find((l) => l.startsWith('HEALTHCHECK'))).to.contain('/healthz');
    // What it runs exists: the entry point, its flags, and the folders it copies.
    const exec = (kw: string) =>
      JSON.parse(final.lines.find((l) => l.startsWith(kw))!.slice(kw.length)) as string[];
    const entry = exec('ENTRYPOINT');
    expect(existsSync(path.join(ROOT, entry.at(-1)!))).to.equal(true);
    for (const flag of usedFlags(exec('CMD'))) expect(serverFlags, flag).to.include(flag);
    for (const l of final.lines.filter((x) => /^COPY (?!--from)/.test(x)))
      for (const src of l.split(/\s+/).slice(1, -1))
        expect(existsSync(path.join(ROOT, src)), src).to.equal(true);
    // The build is made in the image (esbuild), and tsx runs the operator's custom primitives: both are production
    // dependencies.
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(pkg.dependencies).to.have.property('tsx');
    expect(pkg.dependencies).to.have.property('esbuild');
    expect(pkg.dependencies).to.have.property('prom-client');
  });
});
