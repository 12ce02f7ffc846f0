/** STL meshes: binary and ASCII read alike, scaled, and bad files named. */
import { expect } from 'chai';
import { parseStl, writeStl } from '../../src/urdf/stl.ts';

/** Two triangles of a unit square in the z = 0 plane. */
const SQUARE = [0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0];

function ascii(triangles: readonly number[]): Uint8Array {
  const facets: string[] = [];
  for (let t = 0; t < triangles.length; t += 9) {
    const v = (k: number) => `      vertex ${triangles[t + k]} ${triangles[t + k + 1]} ${triangles[t + k + 2]}`;
    facets.push('  facet normal 0 0 1', '    outer loop', v(0), v(3), v(6), '    endloop', '  endfacet');
  }
  return new TextEncoder().encode(['solid square', ...facets, 'endsolid square', ''].join('\n'));
}

describe('urdf/stl', () => {
  it('reads back the triangles it writes, in binary', () => {
    const bytes = writeStl(SQUARE);
    expect(bytes.length).to.equal(84 + 2 * 50);
    expect([...parseStl(bytes)]).to.deep.equal(SQUARE);
  });

  it('reads a binary file whose header starts with "solid", as some exporters write it', () => {
    const bytes = writeStl(SQUARE, 'solid but binary');
    expect([...parseStl(bytes)]).to.deep.equal(SQUARE);
  });

  it('reads ASCII STL with exponents, and applies the mesh scale per axis', () => {
    const tri = [0, 0, 0, 1e3, 0, 0, 0, 2.5e-1, 0];
    expect([...parseStl(ascii(tri))]).to.deep.equal(tri);
    expect([...parseStl(ascii(SQUARE), [0.001, 0.002, 1])]).to.deep.equal(
      [...Float32Array.from(SQUARE.map((v, i) => v * [0.001, 0.002, 1][i % 3]!))],
    );
  });

  it('refuses a truncated binary file, an empty one and a broken facet', () => {
    const bytes = writeStl(SQUARE, 'binary');
    expect(() => parseStl(bytes.subarray(0, bytes.length - 10))).to.throw(/does not hold its 2 triangles/);
    expect(() => parseStl(new TextEncoder().encode('solid empty\nendsolid empty\n'))).to.throw(/no triangles/);
    const broken = new TextEncoder().encode('solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nendloop\nendfacet\nendsolid x\n');
    expect(() => parseStl(broken)).to.throw(/three vertices/);
    expect(() => parseStl(new TextEncoder().encode('solid x\nvertex 0 zero 0\nendsolid\n'))).to.throw(/bad vertex/);
  });
});
