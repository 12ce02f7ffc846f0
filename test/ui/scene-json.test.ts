/** GET /ui/scene.json carries what the view draws: each link's visuals, a mesh's triangles as a plain list. */
import { expect } from 'chai';
import { loadUrdf } from '../../src/urdf/parse.ts';
import { simServer } from '../helpers.ts';
import type { SceneDescription } from '../../src/ui/protocol.ts';

describe('ui: the scene description', () => {
  it("sends the Torso's measured parts as JSON lists of vertices, and no collision shapes", async () => {
    const s = await simServer('torso');
    try {
      const res = await s.get('/ui/scene.json');
      expect(res.statusCode).to.equal(200);
      const scene = JSON.parse(res.body) as SceneDescription;
      const head = scene.urdf.links.find((l) => l.name === 'head')!;
      expect(Object.keys(head).sort()).to.deep.equal(['name', 'visuals']);
      const g = head.visuals[0]!.geometry;
      expect(g.kind).to.equal('mesh');
      if (g.kind !== 'mesh') return;
      expect(Array.isArray(g.triangles)).to.equal(true);
      expect(g.triangles.length % 9).to.equal(0);
      // The same triangles the physics collides with, to 0.01 mm.
      const urdf = await loadUrdf(s.config.urdfPath);
      const collided = urdf.links.get('head')!.collisions[0]!.geometry as { triangles: Float32Array };
      expect(g.triangles.length).to.equal(collided.triangles.length);
      g.triangles.forEach((v, i) => expect(v).to.be.closeTo(collided.triangles[i]!, 1e-5));
      const xs = g.triangles.filter((_, i) => i % 3 === 0);
      expect(Math.max(...xs) - Math.min(...xs)).to.be.closeTo(0.134, 0.001);
      // A typed array would have gone out as an object keyed by index, 3 times the size.
      expect(res.body.length).to.be.below(120_000);
    } finally {
      await s.close();
    }
  });
});
