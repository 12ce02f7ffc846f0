/** The control tables against docs/reference/dynamixel.md 8.3 / 8.5 (pypot's addresses) and the sim's model facts. */
import { expect } from 'chai';
import {
  controlTable,
  decodeBusValue,
  encodeBusValue,
  invalidBusValue,
  modelByNumber,
} from '../../src/dynamixel/control-table.ts';
import { MODELS } from '../../src/dynamixel/registers.ts';

const XL = controlTable(MODELS['XL-320']);
const AX = controlTable(MODELS['AX-12']);
const MX28 = controlTable(MODELS['MX-28']);
const MX64 = controlTable(MODELS['MX-64']);

describe('Dynamixel control tables', () => {
  it("puts every bus register at pypot's addresses (docs/reference/dynamixel.md 8.5), protocol 1 vs XL-320", () => {
    const expected: [string, number, number][] = [
      // register, protocol-1 address, XL-320 address
      ['goal_position', 30, 30],
      ['moving_speed', 32, 32],
      ['torque_limit', 34, 35],
      ['present_position', 36, 37],
      ['present_speed', 38, 39],
      ['present_load', 40, 41],
      ['present_voltage', 42, 45],
      ['present_temperature', 43, 46],
      ['torque_enable', 24, 24],
      ['angle_limit', 6, 6],
    ];
    for (const [reg, p1, xl] of expected) {
      expect(AX.bus[reg as 'goal_position']!.address, `AX ${reg}`).to.equal(p1);
      expect(MX28.bus[reg as 'goal_position']!.address, `MX ${reg}`).to.equal(p1);
      expect(XL.bus[reg as 'goal_position']!.address, `XL ${reg}`).to.equal(xl);
    }
    expect(MX28.bus.pid).to.deep.include({ address: 26, size: 1, count: 3 });
    expect(XL.bus.pid).to.deep.include({ address: 27, size: 1, count: 3 });
    expect(AX.bus.compliance_margin).to.deep.include({ address: 26, count: 2 });
    expect(AX.bus.compliance_slope).to.deep.include({ address: 28, count: 2 });
    expect(AX.bus.pid).to.equal(undefined);
    expect(MX28.bus.compliance_slope).to.equal(undefined);
    expect(MX64.bus.present_current).to.deep.include({ address: 68, size: 2 });
    expect(MX28.bus.present_current).to.equal(undefined);
    expect(XL.bus.control_mode).to.deep.include({ address: 11 });
    expect(XL.item('status_return_level').address).to.equal(17);
    expect(AX.item('status_return_level').address).to.equal(16);
    expect(XL.item('return_delay_time')).to.deep.include({ address: 5, init: 250 });
  });

  it('takes model numbers and encoder range from the ModelSpec the sim uses', () => {
    for (const spec of Object.values(MODELS)) {
      const t = controlTable(spec);
      expect(t.item('model_number').init).to.equal(spec.modelNumber);
      expect(t.item('goal_position').max).to.equal(spec.positionSteps - 1);
      expect(modelByNumber(spec.modelNumber)).to.equal(spec);
    }
    expect(MX28.item('ccw_angle_limit').init).to.equal(4095);
    expect(AX.item('ccw_angle_limit').init).to.equal(1023);
  });

  it('items do not overlap', () => {
    for (const t of [XL, AX, MX28, MX64])
      for (let k = 1; k < t.items.length; k++)
        expect(t.items[k]!.address, `${t.model} ${t.items[k]!.name}`).to.be.at.least(
          t.items[k - 1]!.address + t.items[k - 1]!.size,
        );
  });

  it('encodes and decodes values little-endian, one number per item', () => {
    expect(encodeBusValue(XL.bus.goal_position!, 0x1234)).to.deep.equal([0x34, 0x12]);
    expect(decodeBusValue(XL.bus.goal_position!, [0x34, 0x12])).to.equal(0x1234);
    expect(encodeBusValue(AX.bus.angle_limit!, [10, 1000])).to.deep.equal([10, 0, 0xe8, 3]);
    expect(decodeBusValue(MX28.bus.pid!, [0, 4, 32])).to.deep.equal([0, 4, 32]);
  });

  it('says why a value is refused', () => {
    expect(invalidBusValue(XL.bus.goal_position!, 1023)).to.equal(undefined);
    expect(invalidBusValue(XL.bus.goal_position!, 1024)).to.match(/0 to 1023/);
    expect(invalidBusValue(XL.bus.goal_position!, 1.5)).to.match(/integer/);
    expect(invalidBusValue(MX28.bus.pid!, [0, 32])).to.match(/3 integers/);
    expect(invalidBusValue(XL.bus.present_position!, 3)).to.match(/read-only/);
    expect(invalidBusValue(XL.bus.control_mode!, 3)).to.match(/1 to 2/);
  });
});
