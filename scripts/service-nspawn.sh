#!/usr/bin/env bash
# The service under a real systemd, as on the robot's computer: a Debian 12 container (debootstrap, then
# systemd-nspawn booting its systemd) where `poppy-twin service install` installs the unit from a checkout under a
# private /home/pi, the bus emulator stands for the robot, and the checks below run. Needs root, debootstrap and
# systemd-container (apt-get install debootstrap systemd-container), and the network the first time (the container's
# files are cached in $POPPY_NSPAWN_DIR; each run starts from them afresh). Results: docs/robot-computer.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${POPPY_NSPAWN_DIR:-/var/tmp/poppy-twin-nspawn}
NODE=$(readlink -f "$(command -v node)")
[ "$(id -u)" -eq 0 ] || { echo "run it as root" >&2; exit 2; }
node "$ROOT/scripts/build.js" --if-stale

if [ ! -x "$BASE/usr/bin/systemctl" ]; then
  debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,util-linux,passwd,libstdc++6,procps,curl \
    bookworm "$BASE" http://deb.debian.org/debian >"$BASE.debootstrap.log"
  mkdir -p "$BASE/home/pi/poppy-twin" && chmod 700 "$BASE/home/pi"
fi

# Booted read-only with a tmpfs over it (nothing of a run stays); stopped on the way out.
systemd-nspawn -D "$BASE" --volatile=overlay --private-network --register=no --keep-unit \
  --machine=poppy-twin-check --bind-ro="$NODE:/usr/bin/node" --bind-ro="$ROOT:/home/pi/poppy-twin" -b \
  >"$BASE.boot.log" 2>&1 &
NSPAWN=$!
trap 'kill $NSPAWN 2>/dev/null; wait $NSPAWN 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  INIT=$(pgrep -P $NSPAWN -x systemd || true)
  [ -n "$INIT" ] && break
  sleep 0.3
done
ct() { nsenter -t "$INIT" -m -u -i -n -p -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
# Up (degraded counts: a unit of the base system may fail in a container).
until [[ "$(ct systemctl is-system-running --wait 2>/dev/null || true)" =~ ^(running|degraded)$ ]]; do sleep 0.5; done
pass() { echo "ok   $*"; }
fail() {
  echo "FAIL $*"
  ct journalctl -u poppy-twin -b --no-pager -o cat | tail -20
  exit 1
}
APP=/home/pi/poppy-twin

# The robot: the bus emulator on a pty of the container, the pty's group dialout as a serial port's (the unit's
# DevicePolicy=closed allows serial and video devices: a pty takes a drop-in, as docs/robot-computer.md says).
ct systemd-run -q --unit=emulator -p WorkingDirectory=$APP node --import tsx src/emulator/main.ts --robot=ergo-jr
for _ in $(seq 100); do
  DEV=$(ct journalctl -u emulator -o cat | sed -n 's/^emulating ergo-jr on \([^;]*\);.*/\1/p')
  [ -n "$DEV" ] && break
  sleep 0.3
done
ct sh -c "chgrp dialout $DEV && chmod 660 $DEV && mkdir -p /etc/systemd/system/poppy-twin.service.d &&
  printf '[Service]\nDeviceAllow=char-pts rw\n' >/etc/systemd/system/poppy-twin.service.d/emulator.conf"
ct sh -c 'cat >/tmp/probe.ts' <<EOF
// m2's (id 2) torque_enable, read on the bus once the server has let the port go (protocol 2.0 READ 24, 1 byte).
import { SerialPort } from '$APP/node_modules/serialport/dist/index.js';
import { encodeInstruction } from '$APP/src/dynamixel/packet.ts';
const port = new SerialPort({ path: process.argv[2]!, baudRate: 1000000 });
let reply = Buffer.alloc(0);
port.on('data', (d: Buffer) => (reply = Buffer.concat([reply, d])).length >= 12 && (console.log(reply[9]), process.exit(0)));
port.on('open', () => port.write(encodeInstruction(2, 2, 0x02, [24, 0, 1, 0])));
setTimeout(() => (console.log('none'), process.exit(1)), 2000);
EOF
torque() { ct sh -c "cd $APP && node --import tsx /tmp/probe.ts $DEV" || true; }
TOKEN=
call() { ct curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$@"; }
stiff() { call -H 'Content-Type: application/json' -d false http://127.0.0.1:8080/motors/m2/registers/compliant/value.json; }
active() {
  for _ in $(seq 60); do
    [ "$(call http://127.0.0.1:8080/robot.json)" = 200 ] && return 0
    sleep 0.5
  done
  return 1
}

ct node $APP/dist/service.js install --serial="$DEV" --shadow >/dev/null || fail "install"
ct grep -qx 'ProtectHome=tmpfs' /etc/systemd/system/poppy-twin.service || fail "ProtectHome=tmpfs for a checkout in /home"
TOKEN=$(ct sed -n 's/^POPPY_TWIN_TOKEN=//p' /etc/poppy-twin.env)
active || fail "the service answers /robot.json"
MAIN=$(ct systemctl show poppy-twin -p MainPID --value)
pass "installed from $APP (a private home) and running as $(ct ps -o user= -p "$MAIN")"
[ "$(TOKEN=wrong call http://127.0.0.1:8080/robot.json)" = 401 ] || fail "401 without the token"
[ "$(call -H 'Host: vm:8080' http://127.0.0.1:8080/robot.json)" = 200 ] || fail "its host name (AF_NETLINK)"
pass "the env file's token is asked for; the machine's own host name is served"
ct journalctl -u poppy-twin -b -o cat | head -3 | grep -q '^{"level"' || fail "JSON lines in the journal"
pass "the journal holds pino's JSON lines"

[ "$(stiff)" = 200 ] || fail "m2 stiff"
T0=$(date +%s%N)
ct systemctl stop poppy-twin
MS=$((($(date +%s%N) - T0) / 1000000))
RESULT=$(ct systemctl show poppy-twin -p Result --value)
[ "$RESULT" = success ] || fail "systemctl stop: result $RESULT"
[ "$(torque)" = 0 ] || fail "m2 limp after systemctl stop"
pass "systemctl stop: ${MS} ms, result $RESULT, m2 limp"

ct systemctl start poppy-twin && active || fail "start again"
[ "$(stiff)" = 200 ] || fail "m2 stiff"
ct systemctl kill --kill-who=main -s SIGKILL poppy-twin
sleep 1.5
[ "$(torque)" = 0 ] || fail "m2 limp after the crash"
for _ in $(seq 40); do [ "$(ct systemctl show poppy-twin -p NRestarts --value)" = 1 ] && break; sleep 0.5; done
active || fail "restarted after the crash"
pass "a crash (SIGKILL to the server): m2 limp, restarted by systemd ($(ct systemctl show poppy-twin -p NRestarts --value) restart)"

ct sh -c 'echo {} >/var/lib/poppy-twin/records/kept.record'
ct node $APP/dist/service.js uninstall >/dev/null || fail "uninstall"
ct test -f /var/lib/poppy-twin/records/kept.record || fail "records kept"
[ "$(ct systemctl is-enabled poppy-twin 2>/dev/null || true)" != enabled ] || fail "disabled"
pass "uninstall: stopped, disabled, removed; the records kept"
RTPRIO=$(ct awk '/realtime priority/ {print $4 "/" $5}' /proc/1/limits)
echo "note: the container's systemd has RLIMIT_RTPRIO $RTPRIO (soft/hard); no unit here gets more (LimitRTPRIO=)"
