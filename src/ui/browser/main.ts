/** The web view's entry: the robot's description, the 3D view, the panels, the live stream that feeds them. */
import type { RobotDescription, RobotState, SceneDescription } from '../protocol.ts';
import { viewTitle } from '../title.ts';
import { api, reported } from './api.ts';
import { LiveState } from './live.ts';
import { cameraPanel, ikPanel, motorsPanel, primitivesPanel, recordsPanel, type Panel } from './panels.ts';
import { type CardPose, RobotView } from './view.ts';

const byId = (id: string) => document.getElementById(id)!;

async function start(): Promise<void> {
  const description = (await api('GET', '/ui/robot.json')) as RobotDescription;
  const world = (await api('GET', '/ui/scene.json')) as SceneDescription;
  const title = viewTitle(description);
  byId('title').textContent = title.heading;
  document.title = title.tab;

  const viewBox = byId('view');
  const view = new RobotView(viewBox, description, world);
  byId('view-hint').textContent = 'drag to orbit, right-drag to pan, wheel to zoom';

  const panels: Panel[] = [
    motorsPanel(byId('motors'), description, { showTwin: (on) => view.setGhostVisible(on) }),
    recordsPanel(byId('records')),
  ];
  panels.push(primitivesPanel(byId('primitives')));
  if (description.features.cameraFrame) {
    byId('camera-panel').hidden = false;
    panels.push(cameraPanel(byId('camera'), description));
  }
  if (description.chains.length) {
    byId('ik-panel').hidden = false;
    let picking = false;
    const ik = ikPanel(byId('ik'), description, {
      setPicking: (on) => {
        picking = on;
        viewBox.classList.toggle('picking', on);
      },
      showTarget: (p) => view.showTarget(p),
    });
    // A click (not a drag of the orbit controls) picks the target.
    let down: { x: number; y: number } | undefined;
    view.renderer.domElement.addEventListener('pointerdown', (e) => (down = { x: e.clientX, y: e.clientY }));
    view.renderer.domElement.addEventListener('click', (e) => {
      if (!picking || !down || Math.hypot(e.clientX - down.x, e.clientY - down.y) > 4) return;
      const p = view.pick(e);
      if (p) ik.setTarget(p);
    });
  }
  if (description.features.cards) {
    const refreshCards = async () => {
      const answer = (await api('GET', '/sim/cards/list.json').catch(() => undefined)) as
        { cards: CardPose[] } | undefined;
      if (answer) view.setCards(answer.cards);
    };
    void refreshCards();
    setInterval(() => void refreshCards(), 1000);
  }

  let last: RobotState | undefined;
  const status = byId('link-status');
  const rateInput = byId('rate') as HTMLInputElement;
  const rateError = byId('rate-error');
  const live = new LiveState({
    rate: Number(rateInput.value),
    onState: (state) => {
      last = state;
      view.update(state);
      for (const p of panels) p.update(state);
    },
    onStatus: (s, detail) => {
      status.textContent = detail;
      status.className = `status ${s}`;
    },
    onError: (message) => (rateError.textContent = message),
  });
  rateInput.addEventListener('change', () => {
    rateError.textContent = '';
    live.setRate(Number(rateInput.value));
  });

  // For scripts and browser tests: what is drawn, and where.
  Object.assign(window, {
    poppyView: {
      description,
      lastState: () => last,
      renderedSeq: () => view.renderedSeq,
      framesDrawn: () => view.framesDrawn,
      linkScreenPosition: (link: string) => view.linkScreenPosition(link),
      linkNames: () => world.urdf.links.map((l) => l.name),
      setRobotVisible: (visible: boolean) => view.setRobotVisible(visible),
      // Shadow mode's ghost of the twin (null, false without it).
      ghostVisible: () => view.ghostVisible(),
      ghostJointAngle: (motor: string) => view.ghostJointAngle(motor),
      ghostLinkScreenPosition: (link: string) => view.ghostLinkScreenPosition(link),
      ghostLinkColour: (link: string) => view.ghostLinkColour(link),
    },
  });
}

start().catch((err: unknown) => {
  const box = byId('view-hint');
  void reported(box, () => Promise.reject(err as Error));
  box.classList.add('error');
});
