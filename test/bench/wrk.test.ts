/** The edge bench reads wrk's report (bench/wrk.ts): the rate, the 99th percentile in any unit, and the errors. */
import { expect } from 'chai';
import { parseWrk } from '../../bench/wrk.ts';

const report = (p99: string, extra = '') =>
  [
    'Running 3s test @ http://127.0.0.1:4000/trivial.json',
    '  1 threads and 10 connections',
    '  Thread Stats   Avg      Stdev     Max   +/- Stdev',
    '    Latency   210.00us   80.00us   4.10ms   91.00%',
    '    Req/Sec    47.00k     2.00k    50.00k    70.00%',
    '  Latency Distribution',
    '     50%  190.00us',
    '     75%  220.00us',
    '     90%  260.00us',
    `     99%  ${p99}`,
    '  141000 requests in 3.00s, 25.00MB read',
    extra,
    'Requests/sec:  46999.50',
    'Transfer/sec:      8.33MB',
  ].join('\n');

describe('bench: wrk as the edge bench client', () => {
  it('reads the rate and the p99 in microseconds, milliseconds or seconds', () => {
    expect(parseWrk(report('512.00us'))).to.deep.equal({
      requestsPerSecond: 46999.5,
      p99Ms: 0.512,
      errors: 0,
    });
    expect(parseWrk(report('21.50ms')).p99Ms).to.equal(21.5);
    expect(parseWrk(report('1.20s')).p99Ms).to.equal(1200);
  });

  it('counts socket errors and non-2xx answers, and refuses a report without a rate', () => {
    const extra = '  Socket errors: connect 0, read 2, write 0, timeout 1\n  Non-2xx or 3xx responses: 5';
    expect(parseWrk(report('1.00ms', extra)).errors).to.equal(8);
    expect(() => parseWrk('unable to connect to 127.0.0.1:4000 Connection refused')).to.throw(/no rate/);
  });
});
