/** urdf/collada.ts: the vertices of a COLLADA scene where its nodes put them, in metres (what fit-collisions measures). */
import { expect } from 'chai';
import { colladaVertices } from '../../urdf/collada.ts';

const doc = (unit: string, up: string, scene: string) => `<?xml version="1.0"?>
<COLLADA version="1.4.1" xmlns="http://www.collada.org/2005/11/COLLADASchema">
  <asset><unit meter="${unit}" name="u"/><up_axis>${up}</up_axis></asset>
  <library_geometries>
    <geometry id="g"><mesh>
      <source id="p"><float_array id="pa" count="6">1 2 3 4 5 6</float_array></source>
      <vertices id="v"><input semantic="POSITION" source="#p"/></vertices>
    </mesh></geometry>
  </library_geometries>
  <library_nodes>
    <node id="part"><matrix>1 0 0 10 0 1 0 0 0 0 1 0 0 0 0 1</matrix><instance_geometry url="#g"/></node>
  </library_nodes>
  <library_visual_scenes><visual_scene id="s">${scene}</visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>`;

describe('urdf/collada: colladaVertices', () => {
  it('places a geometry through nested node matrices and instanced nodes, scaled to metres', () => {
    // A quarter turn about z (x -> y), then the instanced node's shift of 10 along x.
    const scene = `<node><matrix>0 -1 0 0 1 0 0 0 0 0 1 100 0 0 0 1</matrix><instance_node url="#part"/></node>`;
    const v = colladaVertices(doc('0.01', 'Z_UP', scene));
    expect(v.map((x) => Math.round(x * 1e6) / 1e6)).to.deep.equal([-0.02, 0.11, 1.03, -0.05, 0.14, 1.06]);
  });

  it('refuses what it does not read: another up axis, a transform other than <matrix>, a missing node', () => {
    expect(() => colladaVertices(doc('1', 'Y_UP', ''))).to.throw(/Y_UP/);
    expect(() => colladaVertices(doc('1', 'Z_UP', '<node><translate>1 0 0</translate></node>'))).to.throw(
      /translate/,
    );
    expect(() => colladaVertices(doc('1', 'Z_UP', '<node><instance_node url="#nothing"/></node>'))).to.throw(
      /#nothing/,
    );
    expect(() => colladaVertices('<robot/>')).to.throw(/not a COLLADA/);
  });
});
