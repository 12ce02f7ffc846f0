"""
The bus emulator checked from outside with pypot's DxlIO (protocol 1.0) or Dxl320IO (XL-320): scan, models, present
positions, torque and goals, position/speed/load; then 200 LED writes each read back, which counts the writes lost
to pypot's flush of the port's output before each packet (issue 28 point 9, docs/decisions/0028-the-pty-relay.md).

  python3 scripts/third-party/pypot_check.py <pypot checkout> <device> <320|1> <ids, comma-separated>

See scripts/third-party/README.md.
"""
import sys, time
sys.path.insert(0, sys.argv.pop(1))
from pypot.dynamixel.io import DxlIO, Dxl320IO
path, kind, ids = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3].split(',')]
IO = Dxl320IO if kind == '320' else DxlIO
res = []
def check(name, ok, detail=''):
    res.append(ok); print(('PASS ' if ok else 'FAIL ') + name + (': ' + str(detail) if detail else ''))
with IO(path, baudrate=1000000, use_sync_read=False) as io:
    found = io.scan(list(range(1, 60)))
    check('scan', sorted(found) == sorted(ids), found)
    check('models', all(io.get_model(ids)), io.get_model(ids))
    pos = io.get_present_position(ids); check('present position', len(pos) == len(ids), pos)
    io.enable_torque(ids)
    time.sleep(0.01)  # pypot flushes the output before the next packet (docs/decisions/0028-the-pty-relay.md)
    goal = {i: p + 20 if p < 100 else p - 20 for i, p in zip(ids, pos)}
    io.set_goal_position(goal); time.sleep(1.0)
    after = io.get_present_position(ids)
    # The goals were taken: every joint went at least half way (a P-only servo under load stops short: docs/twin.md).
    check('goals taken', all(abs(a - p) >= 10 for a, p in zip(after, pos)), after)
    psl = io.get_present_position_speed_load(ids) if kind != '320' else None
    if psl is not None: check('position, speed, load', len(psl) == len(ids), psl[:2])
    # Point 9: pypot flushes before each packet; LED sync writes, each checked by a read.
    lost = 0
    for k in range(200):
        v = k % 2
        if kind == '320': io.set_LED_color({ids[0]: 'red' if v else 'off'})
        else: io.switch_led_on([ids[0]]) if v else io.switch_led_off([ids[0]])
        got = io.get_LED_color([ids[0]])[0] if kind == '320' else io.is_led_on([ids[0]])[0]
        want = ('red' if v else 'off') if kind == '320' else bool(v)
        if got != want: lost += 1
    print(f'LED writes not taken: {lost} of 200')
    io.disable_torque(ids)
print(f'{sum(res)}/{len(res)} passed')
