// Over 400 lines: each panel builds and updates its own DOM; one file keeps the page's controls in one place.
/** The control panels: each builds its DOM once and updates from the live state; errors show beside the control. */
import type { RobotDescription, RobotState, StreamMarker, StreamShadow } from '../protocol.ts';
import { BASE, api, button, el, errorBox, reported } from './api.ts';
import { shadowTint } from './ghost.ts';

export interface Panel {
  update(state: RobotState): void;
}

const enc = encodeURIComponent;

// --- motors ------------------------------------------------------------------------------------------------

export interface MotorsHooks {
  /** The "Show the twin" box: shows or hides the shadow twin's ghost in the 3D view. */
  showTwin(on: boolean): void;
}

export function motorsPanel(root: HTMLElement, description: RobotDescription, hooks: MotorsHooks): Panel {
  const rows = description.motors.map((m) => {
    const min = Math.min(m.lowerLimit, m.upperLimit);
    const max = Math.max(m.lowerLimit, m.upperLimit);
    const slider = el('input', {
      type: 'range',
      min: String(min),
      max: String(max),
      step: '1',
      'aria-label': `goal position of ${m.name}`,
      'data-motor': m.name,
      class: 'goal',
    });
    const goal = el('span', { class: 'goal-value' });
    const present = el('span', { class: 'present', 'data-motor': m.name });
    const compliant = el('input', { type: 'checkbox', class: 'compliant', 'data-motor': m.name });
    const load = el('span');
    const temperature = el('span');
    const error = errorBox({ 'data-motor': m.name });
    // Shadow mode: the motor's disagreement with its twin, on the motor's second line (hidden while they agree).
    const shadow = el('span', {
      class: 'badge shadow',
      'data-motor': m.name,
      title: `${m.name} against its twin: the state, and real - twin in degrees`,
      hidden: '',
    });
    let dragging = false;
    let inFlight = false;
    const sendGoal = async () => {
      inFlight = true;
      await reported(error, () =>
        api('POST', `/motors/${enc(m.name)}/registers/goal_position/value.json`, Number(slider.value)),
      );
      inFlight = false;
    };
    slider.addEventListener('pointerdown', () => (dragging = true));
    slider.addEventListener('input', () => {
      dragging = true;
      goal.textContent = `${slider.value}°`;
      if (!inFlight) void sendGoal();
    });
    slider.addEventListener('change', () => {
      dragging = false;
      void sendGoal();
    });
    compliant.addEventListener('change', () => {
      void reported(error, () =>
        api('POST', `/motors/${enc(m.name)}/registers/compliant/value.json`, compliant.checked),
      );
    });
    const tr = el(
      'tr',
      {},
      el('td', {}, m.name),
      el('td', {}, slider, ' ', goal),
      el('td', {}, present),
      el('td', {}, compliant),
      el('td', {}, load),
      el('td', {}, temperature),
    );
    const errorRow = el('tr', {}, el('td', { colspan: '6' }, shadow, error));
    return {
      tr,
      errorRow,
      slider,
      goal,
      present,
      compliant,
      load,
      temperature,
      shadow,
      isDragging: () => dragging,
    };
  });
  const showTwin = el('input', { type: 'checkbox', id: 'show-twin' });
  showTwin.checked = true;
  showTwin.addEventListener('change', () => hooks.showTwin(showTwin.checked));
  const events = el('ul', { id: 'shadow-events' });
  const shadowBox = el(
    'div',
    { id: 'shadow', hidden: '' },
    el('label', {}, showTwin, ' Show the twin'),
    el(
      'p',
      { class: 'muted' },
      'The twin beside the robot is the light blue ghost; a joint that parts from it turns amber, red on an event.',
    ),
    events,
  );
  let shownEvents: StreamShadow['events'] | undefined;
  root.append(
    el(
      'table',
      {},
      el('tr', {}, ...['motor', 'goal', 'present', 'compliant', 'load', '°C'].map((h) => el('th', {}, h))),
      ...rows.flatMap((r) => [r.tr, r.errorRow]),
    ),
    el('p', { class: 'muted' }, 'A compliant motor is limp: untick it to make it hold and follow its goal.'),
    shadowBox,
  );
  return {
    update(state) {
      const { shadow } = state;
      shadowBox.hidden = shadow === null;
      if (shadow && !(shownEvents && sameEvents(shadow.events, shownEvents))) {
        shownEvents = shadow.events;
        events.replaceChildren(
          ...(shownEvents.length
            ? shownEvents.map((e) =>
                el('li', { 'data-motor': e.motor }, `${e.motor} ${e.kind} since ${e.since.toFixed(1)} s`),
              )
            : [el('li', { class: 'muted' }, 'no event: the robot moves as its twin')]),
        );
      }
      rows.forEach((r, i) => {
        showShadow(r.shadow, shadow?.state[i], shadow?.error[i]);
        r.present.textContent = `${state.present[i]?.toFixed(1)}°`;
        r.load.textContent = `${Math.round(state.load[i] ?? 0) + 0} %`;
        r.temperature.textContent = String(state.temperature[i]);
        if (document.activeElement !== r.compliant) r.compliant.checked = state.compliant[i] ?? false;
        if (!r.isDragging()) {
          r.slider.value = String(state.goal[i]);
          r.goal.textContent = `${state.goal[i]?.toFixed(0)}°`;
        }
      });
    },
  };
}

/** A motor's shadow badge: its state and error while it is not agreeing with its twin (or compliant), else hidden. */
function showShadow(badge: HTMLElement, state: string | undefined, error: number | null | undefined): void {
  const tint = shadowTint(state);
  const text = tint === 'agree' ? '' : error == null ? state! : `${state} ${error.toFixed(1)}°`;
  if (badge.textContent === text) return;
  badge.textContent = text;
  badge.hidden = tint === 'agree';
  badge.className = `badge shadow ${tint}`;
}

function sameEvents(a: StreamShadow['events'], b: StreamShadow['events']): boolean {
  return (
    a.length === b.length &&
    a.every((e, i) => e.motor === b[i]!.motor && e.kind === b[i]!.kind && e.since === b[i]!.since)
  );
}

// --- records -----------------------------------------------------------------------------------------------

export function recordsPanel(root: HTMLElement): Panel {
  const name = el('input', { type: 'text', value: 'my-move', 'aria-label': 'move name', id: 'record-name' });
  const newError = errorBox({ id: 'record-error' });
  const list = el('table', { id: 'moves' });
  const status = el('p', { class: 'muted', id: 'records-status' });
  let shown = '';
  const refresh = async () => {
    const answer = (await reported(newError, () => api('GET', '/records/list.json'))) as
      { moves: string[] } | undefined;
    if (answer) renderList(answer.moves);
  };
  const act = (errorEl: HTMLElement, path: string, body?: unknown) =>
    reported(errorEl, async () => {
      await api('POST', path, body);
      await refresh();
    });
  const renderList = (moves: string[]) => {
    list.replaceChildren(
      ...moves.map((move) => {
        const speed = el('input', {
          type: 'number',
          value: '1',
          step: '0.25',
          min: '0.05',
          'aria-label': `replay speed of ${move}`,
        });
        const error = errorBox();
        const path = (op: string) => `/records/${enc(move)}/${op}.json`;
        return el(
          'tr',
          { 'data-move': move },
          el('td', {}, move),
          el(
            'td',
            {},
            'speed ',
            speed,
            button('Play', () => void act(error, path('play'), { speed: Number(speed.value) })),
            button('Backwards', () => void act(error, path('play'), { speed: -Number(speed.value) })),
            button('Stop', () => void act(error, path('stop'))),
            button('Delete', () => void act(error, path('delete'))),
            error,
          ),
        );
      }),
    );
  };
  root.append(
    el(
      'div',
      { class: 'row' },
      name,
      button('Record', () => void act(newError, `/records/${enc(name.value)}/record.json`), { id: 'record' }),
      button('Save', () => void act(newError, `/records/${enc(name.value)}/save.json`), { id: 'save' }),
      newError,
    ),
    el('p', { class: 'muted' }, 'Make motors compliant, record, move them by hand, save; then play.'),
    status,
    list,
  );
  void refresh();
  return {
    update(state) {
      const text =
        [
          ...state.records.recording.map((m) => `recording ${m}`),
          ...state.records.playing.map((m) => `playing ${m}`),
        ].join(', ') || 'idle';
      if (text !== shown) {
        shown = text;
        status.textContent = text;
        void refresh(); // a recording saved or a replay ended: the list may have changed
      }
    },
  };
}

// --- primitives --------------------------------------------------------------------------------------------

export function primitivesPanel(root: HTMLElement): Panel {
  const table = el('table', { id: 'primitive-list' });
  const listError = errorBox();
  const badges = new Map<string, HTMLElement>();
  root.append(listError, table);
  void reported(listError, async () => {
    const { primitives } = (await api('GET', '/primitives/list.json')) as { primitives: string[] };
    table.replaceChildren(
      ...primitives
        .filter((p) => !p.startsWith('_')) // records' own recorders and players
        .map((p) => {
          const badge = el('span', { class: 'badge' }, 'stopped');
          badges.set(p, badge);
          const error = errorBox();
          const verb = (v: string) => () =>
            void reported(error, () => api('GET', `/primitives/${enc(p)}/${v}.json`));
          return el(
            'tr',
            { 'data-primitive': p },
            el('td', {}, p, ' ', badge),
            el(
              'td',
              {},
              button('Start', verb('start')),
              button('Pause', verb('pause')),
              button('Resume', verb('resume')),
              button('Stop', verb('stop')),
              error,
            ),
          );
        }),
    );
  });
  return {
    update(state) {
      for (const [name, badge] of badges) {
        const s = state.primitives.paused.includes(name)
          ? 'paused'
          : state.primitives.running.includes(name)
            ? 'running'
            : 'stopped';
        if (badge.textContent !== s) {
          badge.textContent = s;
          badge.className = `badge ${s === 'running' ? 'on' : s}`;
        }
      }
    },
  };
}

// --- IK ----------------------------------------------------------------------------------------------------

export interface IkHooks {
  /** Turns click-to-pick in the 3D view on or off; a picked point comes back through `setTarget`. */
  setPicking(on: boolean): void;
  showTarget(point: readonly number[] | null): void;
}

export function ikPanel(
  root: HTMLElement,
  description: RobotDescription,
  hooks: IkHooks,
): { setTarget(p: readonly number[]): void } {
  const chain = el(
    'select',
    { 'aria-label': 'chain' },
    ...description.chains.map((c) => el('option', {}, c)),
  );
  const axes = ['x', 'y', 'z'].map((a) =>
    el('input', { type: 'number', step: '0.005', value: '0', 'aria-label': `target ${a} (m)` }),
  );
  const duration = el('input', {
    type: 'number',
    step: '0.5',
    min: '0',
    value: '2',
    'aria-label': 'duration',
  });
  const pick = el('input', { type: 'checkbox', id: 'ik-pick' });
  const answer = el('span', { class: 'muted' });
  const error = errorBox({ id: 'ik-error' });
  const current = async () => {
    const pose = (await reported(error, () => api('GET', `/ik/${enc(chain.value)}/value.json`))) as
      { xyz: string } | undefined;
    if (pose) fill(pose.xyz.split(',').map(Number));
  };
  const fill = (p: readonly number[]) => axes.forEach((input, i) => (input.value = (p[i] ?? 0).toFixed(3)));
  const setTarget = (p: readonly number[]) => {
    fill(p);
    hooks.showTarget(p);
  };
  for (const input of axes)
    input.addEventListener('change', () => hooks.showTarget(axes.map((a) => Number(a.value))));
  pick.addEventListener('change', () => hooks.setPicking(pick.checked));
  root.append(
    el(
      'div',
      { class: 'row' },
      'chain ',
      chain,
      button('Where is it now?', () => void current(), { id: 'ik-where' }),
    ),
    el('div', { class: 'row' }, 'x ', axes[0]!, 'y ', axes[1]!, 'z ', axes[2]!, ' m'),
    el('div', { class: 'row' }, el('label', {}, pick, ' click in the 3D view to set the target')),
    el(
      'div',
      { class: 'row' },
      'duration ',
      duration,
      ' s ',
      button(
        'Go',
        () => {
          void reported(error, async () => {
            const reached = (await api('POST', `/ik/${enc(chain.value)}/goto.json`, {
              xyz: axes.map((a) => Number(a.value)),
              duration: Number(duration.value),
            })) as { xyz: string };
            answer.textContent = `solution reaches ${reached.xyz}`;
          });
        },
        { id: 'ik-go' },
      ),
      error,
    ),
    answer,
  );
  void current();
  return { setTarget };
}

// --- camera ------------------------------------------------------------------------------------------------

export function cameraPanel(root: HTMLElement, description: RobotDescription): Panel {
  const [w, h] = description.camera?.resolution ?? [640, 480];
  const img = el('img', { alt: "the robot's camera", width: String(w), height: String(h) });
  const overlay = el('canvas', { width: String(w), height: String(h) });
  const live = el('input', { type: 'checkbox' });
  live.checked = true;
  const error = errorBox();
  let loading = false;
  const grab = async () => {
    if (loading || !live.checked) return;
    loading = true;
    await reported(error, async () => {
      const res = await fetch(`${BASE}/sensors/camera/frame.png?t=${Date.now()}`);
      if (!res.ok) throw new Error(`no frame: HTTP ${res.status}`);
      const url = URL.createObjectURL(await res.blob());
      const old = img.src;
      img.src = url;
      if (old) URL.revokeObjectURL(old);
    });
    loading = false;
  };
  setInterval(() => void grab(), 500);
  root.append(
    el('div', { class: 'camera-frame' }, img, overlay),
    el('div', { class: 'row' }, el('label', {}, live, ' live (2 frames/s)'), error),
  );
  if (description.features.cards) root.append(cardButtons());
  return {
    update(state) {
      drawMarkers(overlay, state.markers);
    },
  };
}

function drawMarkers(canvas: HTMLCanvasElement, markers: readonly StreamMarker[] | null): void {
  const g = canvas.getContext('2d')!;
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.strokeStyle = '#22c55e';
  g.lineWidth = 3;
  g.fillStyle = '#22c55e';
  g.font = '18px sans-serif';
  for (const m of markers ?? []) {
    g.beginPath();
    m.corners.forEach(([x, y], i) => (i ? g.lineTo(x, y) : g.moveTo(x, y)));
    g.closePath();
    g.stroke();
    g.fillText(m.name ?? String(m.id), m.centre[0], m.centre[1]);
  }
}

/** Sim only: hold a marker card in front of the camera, or put it back. */
function cardButtons(): HTMLElement {
  const box = el('table', { id: 'cards' });
  const error = errorBox();
  void reported(error, async () => {
    const { cards } = (await api('GET', '/sim/cards/list.json')) as { cards: { name: string; id: number }[] };
    box.replaceChildren(
      ...cards.map((c) => {
        const rowError = errorBox();
        const post = (op: string) => () =>
          void reported(rowError, () => api('POST', `/sim/cards/${enc(c.name)}/${op}.json`));
        return el(
          'tr',
          { 'data-card': c.name },
          el('td', {}, `card ${c.name}`),
          el(
            'td',
            {},
            button('Show to the camera', post('show')),
            button('Put away', post('hide')),
            rowError,
          ),
        );
      }),
    );
  });
  return el('div', {}, box, error);
}
