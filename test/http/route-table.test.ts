/**
 * The plain lane's route table (src/http/lane.ts): the route and parameters a URL matches, and the matches it keeps
 * for URLs asked again (the same frozen parameters each time), within MATCHES_KEPT per method.
 */
import { expect } from 'chai';
import { KEPT_URL_MAX, MATCHES_KEPT, patternOf, RouteTable } from '../../src/http/lane.ts';

function table(): RouteTable<string> {
  const t = new RouteTable<string>();
  for (const [method, path] of [
    ['GET', '/motors/list.json'],
    ['GET', '/motors/:motor/registers/list.json'],
    ['GET', '/motors/:motor/registers/:register/value.json'],
    ['POST', '/motors/:motor/registers/:register/value.json'],
    ['GET', '/sensors/code/:code.json'],
  ] as const)
    t.add(method, patternOf(path)!, `${method} ${path}`);
  return t;
}

describe('the plain lane route table', () => {
  it('matches routes and parameters, a word before a parameter, by method', () => {
    const t = table();
    expect(t.find('GET', '/motors/list.json')).to.deep.equal({ route: 'GET /motors/list.json', params: {} });
    expect(t.find('GET', '/motors/m1/registers/list.json')?.route).to.equal(
      'GET /motors/:motor/registers/list.json',
    );
    expect(t.find('GET', '/motors/m1/registers/goal_position/value.json')?.params).to.deep.equal({
      motor: 'm1',
      register: 'goal_position',
    });
    expect(t.find('POST', '/motors/m1/registers/led/value.json')?.route).to.equal(
      'POST /motors/:motor/registers/:register/value.json',
    );
    expect(t.find('GET', '/sensors/code/caribou.json')?.params).to.deep.equal({ code: 'caribou' });
    for (const url of [
      '/motors/m.1/registers/list.json',
      '/motors',
      '/nothing.json',
      'motors/list.json',
      '/motors/list.json/',
    ])
      expect(t.find('GET', url), url).to.equal(undefined);
    expect(t.find('DELETE', '/motors/list.json')).to.equal(undefined);
  });

  it('a URL asked again gets the same frozen parameters; a full table forgets and still matches right', () => {
    const t = table();
    const url = '/motors/head_z/registers/present_position/value.json';
    const first = t.find('GET', url)!;
    expect(t.find('GET', `${url}`)).to.equal(first);
    expect(Object.isFrozen(first.params)).to.equal(true);
    expect(() => ((first.params as Record<string, string>).motor = 'other')).to.throw(TypeError);
    // The POST table keeps its own matches.
    expect(t.find('POST', url)).to.not.equal(first);
    for (let i = 0; i < MATCHES_KEPT + 10; i++) {
      const m = t.find('GET', `/motors/m${i}/registers/present_speed/value.json`);
      expect(m?.params.motor).to.equal(`m${i}`);
    }
    // Forgotten when the table filled (it keeps no more than MATCHES_KEPT), found again as it was.
    const again = t.find('GET', url)!;
    expect(again).to.not.equal(first);
    expect(again.params).to.deep.equal({ motor: 'head_z', register: 'present_position' });
    // A long URL is matched every time but never kept.
    const long = `/motors/${'m'.repeat(KEPT_URL_MAX)}/registers/list.json`;
    const once = t.find('GET', long)!;
    expect(once.params.motor).to.have.length(KEPT_URL_MAX);
    expect(t.find('GET', long)).to.not.equal(once);
  });
});
