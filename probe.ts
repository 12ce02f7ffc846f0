import { openTwin } from './src/scenario/twin.ts';
const t = await openTwin('ergo-jr', { recordsDir: '/tmp/probe-rec' });
await t.get('/primitives/safe_power_up/start.json');
for (let i = 0; i < 5; i++) { await t.advance(2); console.log(JSON.stringify(t.robot.motors.map(m => [m.name, m.state.presentPosition.toFixed(1), m.commands.goalPosition.toFixed(1)])), JSON.stringify((await t.get('/sim/contacts.json')).json().contacts.map((c: any) => c.a + '-' + c.b + ':' + c.impulse.toFixed(4)))); }
await t.close();
