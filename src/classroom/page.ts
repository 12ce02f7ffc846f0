/**
 * The teacher's landing page: a grid of small live views, one per twin (each reads its twin's state stream at a low
 * rate and draws every motor's angle), with its real-time factor, running primitives and last request from
 * GET /twins/list.json, and a banner when the machine is short of CPU.
 */

/** Frames per second each small view asks of its twin's stream: enough to watch, cheap for thirty twins. */
export const GRID_STREAM_RATE = 5;

export function landingPage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Poppy classroom</title><link rel="icon" href="data:,">
<style>
body { font: 14px system-ui, sans-serif; margin: 1em; background: #f4f5f7; }
#banner { display: none; padding: .6em 1em; background: #ffe8a3; border: 1px solid #d8b100; margin-bottom: 1em; }
#grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: .8em; }
.twin { background: #fff; border: 1px solid #ccd; border-radius: 6px; padding: .5em; }
.twin h2 { font-size: 1em; margin: 0 0 .3em; display: flex; justify-content: space-between; }
.twin canvas { width: 100%; height: 90px; background: #eef; border-radius: 4px; }
.twin .meta { font-size: 12px; color: #444; min-height: 3.6em; }
.twin.late h2 { color: #b00; }
.twin.offline { opacity: .5; }
</style></head>
<body>
<h1>Poppy classroom</h1>
<div id="banner"></div>
<p id="summary">loading…</p>
<div id="grid"></div>
<p><a href="/twins/list.json">/twins/list.json</a> · <a href="/metrics">/metrics</a> · <a href="/docs">API reference</a></p>
<script type="module">
const rate = ${GRID_STREAM_RATE};
const grid = document.getElementById('grid');
const cards = new Map();
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

function card(t) {
  const el = document.createElement('div');
  el.className = 'twin';
  el.title = t.name + ' (Poppy ' + t.robot + ')'; // as the tab of the twin's own view
  el.innerHTML = '<h2><a></a><span class="rtf"></span></h2><canvas width="220" height="90"></canvas><div class="meta"></div>';
  const link = el.querySelector('a');
  link.href = t.url + 'ui/';
  link.textContent = t.name;
  grid.append(el);
  const c = { el, motors: [], canvas: el.querySelector('canvas') };
  connect(t, c);
  return c;
}

function connect(t, c) {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const socket = new WebSocket(scheme + '://' + location.host + t.url + 'stream/state?rate=' + rate);
  socket.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (m.type === 'hello') c.motors = m.motors;
    else if (m.type === 'state') draw(c, m.present);
  };
  socket.onclose = () => setTimeout(() => connect(t, c), 2000);
}

function draw(c, present) {
  const g = c.canvas.getContext('2d');
  const { width, height } = c.canvas;
  g.clearRect(0, 0, width, height);
  const n = present.length;
  const w = width / Math.max(1, n);
  present.forEach((deg, i) => {
    const m = c.motors[i];
    const lo = m ? Math.min(m.lowerLimit, m.upperLimit) : -180;
    const hi = m ? Math.max(m.lowerLimit, m.upperLimit) : 180;
    const f = Math.max(0, Math.min(1, (deg - lo) / (hi - lo || 1)));
    g.fillStyle = '#4a6fd0';
    g.fillRect(i * w + 2, height * (1 - f), w - 4, height * f);
  });
}

async function refresh() {
  try {
    const list = await (await fetch('/twins/list.json')).json();
    const banner = document.getElementById('banner');
    banner.style.display = list.short_of_cpu ? 'block' : 'none';
    banner.textContent = 'This machine is short of CPU: every twin runs at ' + list.real_time_factor.toFixed(2) +
      ' x real time (sim clocks stay honest: waits and durations are in sim time).';
    const ready = list.twins.filter((t) => t.ready).length;
    const offline = list.twins.filter((t) => !t.online).length;
    document.getElementById('summary').textContent = list.twins.length + ' twins, ' + ready + ' ready, ' + (offline ? offline + ' offline, ' : '') + 'real-time factor ' + list.real_time_factor.toFixed(2);
    for (const t of list.twins) {
      const c = cards.get(t.name) ?? cards.set(t.name, card(t)).get(t.name);
      c.el.classList.toggle('late', list.short_of_cpu);
      c.el.classList.toggle('offline', !t.online);
      c.el.querySelector('.rtf').textContent = 'x' + t.real_time_factor.toFixed(2);
      const last = t.last_request ? esc(t.last_request.method + ' ' + t.last_request.url + ' ' + t.last_request.status) : 'no request yet';
      c.el.querySelector('.meta').innerHTML = esc(t.robot) + ' · <a href="//' + esc(location.hostname) + ':' + t.port + '/ui/">port ' + t.port + '</a><br>' +
        (!t.online ? 'offline: its worker thread is gone' : t.running_primitives.length ? 'running: ' + esc(t.running_primitives.join(', ')) : 'no primitive running') + '<br>' + last;
    }
  } catch (err) {
    document.getElementById('summary').textContent = 'the classroom did not answer: ' + err.message;
  }
}
refresh();
setInterval(refresh, 1000);
</script>
</body></html>
`;
}
