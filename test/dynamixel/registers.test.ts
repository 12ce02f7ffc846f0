/** Raw <-> SI conversions against the docs/reference/dynamixel.md 8.5 examples, and the per-model register tables (docs/reference/contract.md 2). */
import { expect } from 'chai';
import {
  LED_COLOURS,
  MODELS,
  WRITABLE_REGISTERS,
  ampsToCurrent,
  currentToAmps,
  degSToSpeed,
  degToPosition,
  gainsToRawPid,
  loadToPercent,
  maxSpeedDegS,
  modelSpec,
  motorRegisters,
  percentToLoad,
  percentToTorqueLimit,
  positionResolution,
  positionToDeg,
  rawPidToGains,
  speedToDegS,
  torqueLimitToPercent,
  voltageToVolts,
  voltsToVoltage,
} from '../../src/dynamixel/registers.ts';
import { COMMON_REGISTERS, MODEL_EXTRAS, WRITABLE } from '../http/facts.ts';

const XL = MODELS['XL-320'];
const AX = MODELS['AX-12'];
const MX28 = MODELS['MX-28'];
const MX64 = MODELS['MX-64'];

describe('register conversions (docs/reference/dynamixel.md 8.5)', () => {
  describe('position', () => {
    it('XL-320 / AX-12: 0 -> -150, 1023 -> 150, 512 -> 0.15, 0 deg -> 512', () => {
      for (const spec of [XL, AX]) {
        expect(positionToDeg(spec, 0)).to.equal(-150);
        expect(positionToDeg(spec, 1023)).to.equal(150);
        expect(positionToDeg(spec, 512)).to.equal(0.15);
        expect(positionToDeg(spec, 511)).to.equal(-0.15);
        expect(degToPosition(spec, 0)).to.equal(512);
        expect(degToPosition(spec, -150)).to.equal(0);
        expect(degToPosition(spec, 150)).to.equal(1023);
      }
    });

    it('MX: 2048 -> 0.04, 0 deg -> 2048, 0 -> -180, 4095 -> 180', () => {
      for (const spec of [MX28, MX64]) {
        expect(positionToDeg(spec, 2048)).to.equal(0.04);
        expect(positionToDeg(spec, 0)).to.equal(-180);
        expect(positionToDeg(spec, 4095)).to.equal(180);
        expect(degToPosition(spec, 0)).to.equal(2048);
        expect(degToPosition(spec, 180)).to.equal(4095);
      }
    });

    it('rounds to 0.01 degree and clamps writes into the register range', () => {
      expect(positionToDeg(XL, 100)).to.equal(-120.67); // 300*100/1023 - 150 = -120.674...
      expect(degToPosition(XL, -90)).to.equal(205); // docs/reference/robots.md 1.1: raw -90 -> register 205
      expect(positionToDeg(XL, 205)).to.equal(-89.88);
      expect(degToPosition(XL, 400)).to.equal(1023);
      expect(degToPosition(XL, -400)).to.equal(0);
      expect(degToPosition(MX28, 1000)).to.equal(4095);
      expect(degToPosition(MX28, -1000)).to.equal(0);
    });

    it('every register value survives a round trip through degrees', () => {
      for (const spec of [XL, MX28]) {
        for (let v = 0; v < spec.positionSteps; v++) {
          expect(degToPosition(spec, positionToDeg(spec, v)), `${spec.name} ${v}`).to.equal(v);
        }
      }
    });

    it('one count is 300/1023 degree (XL, AX) or 360/4095 degree (MX)', () => {
      expect(positionResolution(XL)).to.be.closeTo(0.29326, 1e-5);
      expect(positionResolution(MX28)).to.be.closeTo(0.087912, 1e-6);
    });
  });

  describe('speed', () => {
    it('100 deg/s -> 150 (XL/AX) / 146 (MX); -100 -> 1174 / 1170', () => {
      expect(degSToSpeed(XL, 100)).to.equal(150);
      expect(degSToSpeed(AX, 100)).to.equal(150);
      expect(degSToSpeed(MX28, 100)).to.equal(146);
      expect(degSToSpeed(MX64, 100)).to.equal(146);
      expect(degSToSpeed(XL, -100)).to.equal(1174);
      expect(degSToSpeed(MX28, -100)).to.equal(1170);
      expect(degSToSpeed(XL, 0)).to.equal(0);
    });

    it('v 1 -> 0.666 / 0.684 deg/s; bit 10 is the sign', () => {
      expect(speedToDegS(XL, 1)).to.be.closeTo(0.666, 1e-9);
      expect(speedToDegS(MX28, 1)).to.be.closeTo(0.684, 1e-9);
      expect(speedToDegS(XL, 1024 + 150)).to.be.closeTo(-99.9, 1e-9);
      expect(speedToDegS(MX28, 146)).to.be.closeTo(99.864, 1e-9);
      expect(speedToDegS(XL, 0)).to.equal(0);
    });

    it('writes clamp |deg/s| to 1023 units: 681.318 (0.111 rpm/unit), 699.732 (0.114)', () => {
      expect(maxSpeedDegS(XL)).to.be.closeTo(681.318, 1e-9);
      expect(maxSpeedDegS(MX28)).to.be.closeTo(699.732, 1e-9);
      expect(degSToSpeed(XL, 5000)).to.equal(1023);
      expect(degSToSpeed(XL, -5000)).to.equal(2047);
      expect(degSToSpeed(MX28, 1e9)).to.equal(1023);
    });
  });

  describe('torque limit and load', () => {
    it('70 % -> 716, 100 % -> 1023, and back rounded to 0.1', () => {
      expect(percentToTorqueLimit(70)).to.equal(716);
      expect(percentToTorqueLimit(100)).to.equal(1023);
      expect(percentToTorqueLimit(0)).to.equal(0);
      expect(percentToTorqueLimit(150)).to.equal(1023);
      expect(percentToTorqueLimit(-10)).to.equal(0);
      expect(torqueLimitToPercent(716)).to.equal(70);
      expect(torqueLimitToPercent(1023)).to.equal(100);
      expect(torqueLimitToPercent(512)).to.equal(50);
    });

    it('load 1536 -> -50.0, 512 -> 50.0; bit 10 is the sign', () => {
      expect(loadToPercent(1536)).to.equal(-50);
      expect(loadToPercent(512)).to.equal(50);
      expect(loadToPercent(0)).to.equal(0);
      expect(loadToPercent(1023)).to.equal(100);
      expect(loadToPercent(2047)).to.equal(-100);
      expect(percentToLoad(-50)).to.equal(1536);
      expect(percentToLoad(50)).to.equal(512);
      expect(percentToLoad(250)).to.equal(1023);
    });
  });

  describe('PID', () => {
    it('(Kp, Ki, Kd) = (4, 2, 0) -> raw [D, I, P] = [0, 4, 32]; Jump (10, 0, 0) -> P 80', () => {
      expect(gainsToRawPid([4, 2, 0])).to.deep.equal([0, 4, 32]);
      expect(gainsToRawPid([10, 0, 0])).to.deep.equal([0, 0, 80]);
    });

    it('raw [D, I, P] -> [Kp, Ki, Kd]: [0, 4, 32] -> [4, 1.953125, 0]; default P 32 -> [4, 0, 0]', () => {
      expect(rawPidToGains([0, 4, 32])).to.deep.equal([4, 1.953125, 0]);
      expect(rawPidToGains([0, 0, 32])).to.deep.equal([4, 0, 0]);
      expect(rawPidToGains([250, 0, 8])).to.deep.equal([1, 0, 1]);
    });

    it('truncates and clamps each raw value to 0..254', () => {
      expect(gainsToRawPid([4.1, 0, 0])).to.deep.equal([0, 0, 32]);
      expect(gainsToRawPid([100, 1000, 10])).to.deep.equal([254, 254, 254]);
      expect(gainsToRawPid([-1, -1, -1])).to.deep.equal([0, 0, 0]);
      expect(gainsToRawPid([1, 1, 1])).to.deep.equal([250, 2, 8]);
    });
  });

  describe('voltage, current, LED', () => {
    it('voltage V = v x 0.1; write int(V x 10)', () => {
      expect(voltageToVolts(121)).to.equal(12.1);
      expect(voltageToVolts(74)).to.equal(7.4);
      expect(voltsToVoltage(12.1)).to.equal(121);
      expect(voltsToVoltage(7.4)).to.equal(74);
    });

    it('current (MX-64) A = 4.5 mA x (v - 2048)', () => {
      expect(currentToAmps(2048)).to.equal(0);
      expect(currentToAmps(2148)).to.equal(0.45);
      expect(currentToAmps(1948)).to.equal(-0.45);
      expect(ampsToCurrent(0.45)).to.equal(2148);
      expect(ampsToCurrent(0)).to.equal(2048);
    });

    it('LED register 0..7 <-> off, red, green, yellow, blue, pink, cyan, white', () => {
      expect([...LED_COLOURS]).to.deep.equal([
        'off',
        'red',
        'green',
        'yellow',
        'blue',
        'pink',
        'cyan',
        'white',
      ]);
    });
  });
});

describe('model tables (docs/reference/contract.md 2, docs/reference/pypot.md 4.1, docs/reference/dynamixel.md 8.5)', () => {
  it('each model lists its registers in CONTRACT order', () => {
    for (const model of ['AX-12', 'MX-28', 'MX-64', 'XL-320'] as const) {
      expect([...motorRegisters(MODELS[model])], model).to.deep.equal([
        ...COMMON_REGISTERS,
        ...MODEL_EXTRAS[model],
      ]);
    }
  });

  it('"AX-12A" is the AX-12; model numbers are the Dynamixel ones', () => {
    expect(modelSpec('AX-12A')).to.equal(AX);
    expect(modelSpec('AX-12')).to.equal(AX);
    expect(modelSpec('MX-64')).to.equal(MX64);
    expect([AX.modelNumber, MX28.modelNumber, MX64.modelNumber, XL.modelNumber]).to.deep.equal([
      12, 29, 310, 350,
    ]);
  });

  it('position encoders and speed units per model', () => {
    expect([XL.positionSteps, XL.positionSpan, XL.speedUnitRpm]).to.deep.equal([1024, 300, 0.111]);
    expect([AX.positionSteps, AX.positionSpan, AX.speedUnitRpm]).to.deep.equal([1024, 300, 0.111]);
    expect([MX28.positionSteps, MX28.positionSpan, MX28.speedUnitRpm]).to.deep.equal([4096, 360, 0.114]);
    expect([MX64.positionSteps, MX64.positionSpan, MX64.speedUnitRpm]).to.deep.equal([4096, 360, 0.114]);
    expect([XL.protocol, AX.protocol, MX28.protocol]).to.deep.equal([2, 1, 1]);
  });

  it('the writable registers are exactly the CONTRACT ones', () => {
    expect([...WRITABLE_REGISTERS]).to.have.members(WRITABLE);
  });
});
