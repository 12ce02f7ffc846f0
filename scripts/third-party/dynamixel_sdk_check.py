"""
The bus emulator checked from outside with ROBOTIS's DynamixelSDK (Python): ping, reads and writes, sync and bulk reads
and writes, and the e-manual points of issue 28 (Moving, REG_WRITE/ACTION, Data Length and Access errors, ID change,
broadcast ping, REBOOT, CRC error; on protocol 1.0 the Angle Limit bit and the checksum error).

  python3 scripts/third-party/dynamixel_sdk_check.py <sdk python/src dir> <device> <2.0|1.0> <ids, comma-separated>

See scripts/third-party/README.md for getting the SDK and the emulator's device.
"""
import sys, time
sys.path.insert(0, sys.argv.pop(1))
from dynamixel_sdk import *
port_path, proto, ids = sys.argv[1], float(sys.argv[2]), [int(x) for x in sys.argv[3].split(',')]
ph = PortHandler(port_path); assert ph.openPort() and ph.setBaudRate(1000000)
pk = PacketHandler(proto)
res = []
def check(name, ok, detail=''):
    res.append(ok); print(('PASS ' if ok else 'FAIL ') + name + (': ' + str(detail) if detail else ''))
for i in ids:
    model, c, e = pk.ping(ph, i); check(f'ping {i}', c == COMM_SUCCESS and e == 0, f'model {model} comm {pk.getTxRxResult(c)} err {e}')
if proto == 2.0:
    POS, GOAL, TORQUE, MOVING, LED, ID = 37, 30, 24, 49, 25, 3
    pos, c, e = pk.read2ByteTxRx(ph, ids[0], POS); check('read present position', c == 0 and e == 0, pos)
    c, e = pk.write1ByteTxRx(ph, ids[0], TORQUE, 1); check('torque on', c == 0 and e == 0)
    c, e = pk.write2ByteTxRx(ph, ids[0], GOAL, (pos + 300) % 1024); check('write goal', c == 0 and e == 0)
    time.sleep(0.05); mv, c, e = pk.read1ByteTxRx(ph, ids[0], MOVING); check('moving = 1 mid-move', c == 0 and mv == 1, mv)
    time.sleep(2.5); mv, c, e = pk.read1ByteTxRx(ph, ids[0], MOVING); check('moving = 0 once there', c == 0 and mv == 0, mv)
    gsr = GroupSyncRead(ph, pk, POS, 2); [gsr.addParam(i) for i in ids]
    c = gsr.txRxPacket(); check('sync read', c == 0 and all(gsr.isAvailable(i, POS, 2) for i in ids), [gsr.getData(i, POS, 2) for i in ids])
    gsw = GroupSyncWrite(ph, pk, LED, 1); [gsw.addParam(i, [2]) for i in ids]
    c = gsw.txPacket(); time.sleep(0.01); leds = [pk.read1ByteTxRx(ph, i, LED)[0] for i in ids]; check('sync write LED', c == 0 and leds == [2]*len(ids), leds)
    gbr = GroupBulkRead(ph, pk); gbr.addParam(ids[0], POS, 2); gbr.addParam(ids[1], LED, 1)
    c = gbr.txRxPacket(); check('bulk read', c == 0 and gbr.isAvailable(ids[0], POS, 2) and gbr.getData(ids[1], LED, 1) == 2, (gbr.getData(ids[0], POS, 2), gbr.getData(ids[1], LED, 1)))
    gbw = GroupBulkWrite(ph, pk); gbw.addParam(ids[0], LED, 1, [4]); gbw.addParam(ids[1], LED, 1, [1])
    c = gbw.txPacket(); time.sleep(0.01); check('bulk write', c == 0 and [pk.read1ByteTxRx(ph, i, LED)[0] for i in ids[:2]] == [4, 1])
    c, e = pk.regWriteTxRx(ph, ids[2], LED, 1, [3]); v1 = pk.read1ByteTxRx(ph, ids[2], LED)[0]
    c2 = pk.action(ph, ids[2]); time.sleep(0.01); v2 = pk.read1ByteTxRx(ph, ids[2], LED)[0]
    check('REG_WRITE held until ACTION', c == 0 and e == 0 and v1 != 3 and v2 == 3, (v1, v2))
    c, e = pk.writeTxRx(ph, ids[0], GOAL, 1, [10]); check('1-byte write into 2-byte goal: Data Length Error', e & 0x7f == 5, e)
    c, e = pk.write1ByteTxRx(ph, ids[0], ID, 42); check('EEPROM write with torque on: Access Error', e & 0x7f == 7, e)
    c, e = pk.write1ByteTxRx(ph, ids[0], TORQUE, 0)
    c, e = pk.write1ByteTxRx(ph, ids[0], ID, 42); m, c2, e2 = pk.ping(ph, 42); m3, c3, e3 = pk.ping(ph, ids[0])
    check('ID change takes effect', c == 0 and c2 == 0 and c3 != 0, (pk.getTxRxResult(c2), pk.getTxRxResult(c3)))
    pk.write1ByteTxRx(ph, 42, ID, ids[0])
    lst, c = pk.broadcastPing(ph); check('broadcast ping', c == 0 and sorted(lst.keys()) == sorted(ids), sorted(lst.keys()))
    c, e = pk.reboot(ph, ids[1]); time.sleep(0.1); t, c2, e2 = pk.read1ByteTxRx(ph, ids[1], TORQUE); check('reboot', c == 0 and c2 == 0 and t == 0, (pk.getTxRxResult(c), t))
    # A bad CRC: the instruction packet of a read with its last byte changed.
    raw = [0xFF, 0xFF, 0xFD, 0x00, ids[0], 7, 0, 0x02, POS, 0, 2, 0]
    crc = pk.updateCRC(0, raw, len(raw)); raw += [crc & 0xFF, (crc >> 8) ^ 0x55]
    ph.clearPort(); ph.writePort(raw); time.sleep(0.02); rx = ph.readPort(64)
    check('bad CRC answered with CRC error (3)', len(rx) >= 9 and rx[8] & 0x7f == 3, list(rx))
else:
    POS, GOAL, TORQUE, LED, CW, CCW = 36, 30, 24, 25, 6, 8
    pos, c, e = pk.read2ByteTxRx(ph, ids[0], POS); check('read present position', c == 0 and e == 0, pos)
    gsw = GroupSyncWrite(ph, pk, LED, 1); [gsw.addParam(i, [1]) for i in ids]
    c = gsw.txPacket(); time.sleep(0.01); leds = [pk.read1ByteTxRx(ph, i, LED)[0] for i in ids]; check('sync write LED', c == 0 and leds == [1]*len(ids), leds)
    # GroupBulkRead's protocol 1.0 path passes bulkReadTx an argument too many in this SDK version: the same packet by hand.
    param = sum(([2, i, POS] for i in ids), [])
    c = pk.bulkReadTx(ph, param, len(param)); got = []
    for i in ids:
        data, c2, e2 = pk.readRx(ph, i, 2); got.append(c2 == 0 and len(data) == 2)
    check('bulk read (MX)', c == 0 and all(got), got)
    cw = pk.read2ByteTxRx(ph, ids[0], CW)[0]; ccw = pk.read2ByteTxRx(ph, ids[0], CCW)[0]
    c, e = pk.write1ByteTxRx(ph, ids[0], TORQUE, 1)
    bad = ccw + 10 if ccw < 4085 else cw - 10
    c, e = pk.write2ByteTxRx(ph, ids[0], GOAL, bad); check('goal outside CW/CCW: Angle Limit bit', c == 0 and (e & 0x02) != 0, (cw, ccw, bad, e))
    raw = [0xFF, 0xFF, ids[0], 4, 0x02, POS, 2]; raw.append(((~sum(raw[2:]) & 0xFF) ^ 0x5A))
    ph.clearPort(); ph.writePort(raw); time.sleep(0.02); rx = ph.readPort(64)
    check('bad checksum answered with the checksum bit (0x10)', len(rx) >= 6 and (rx[4] & 0x10) != 0, list(rx))
    c, e = pk.write1ByteTxRx(ph, ids[0], TORQUE, 0)
print(f'{sum(res)}/{len(res)} passed')
