/**
 * One motor as the robot sees it: the last state read from the bus and the commands to write, in user units
 * (docs/reference/robots.md 0). Conversions to raw registers happen in the control loop through src/dynamixel/registers.ts.
 */
import type { MotorConfig } from '../config/robot-config.ts';
import { type AngleFrame, rawToUser, userToRaw } from '../core/frames.ts';
import type { LedColour, ModelSpec, MotorRegister } from '../dynamixel/registers.ts';
import { motorRegisters } from '../dynamixel/registers.ts';

export interface MotorState {
  presentPosition: number; // user deg
  presentSpeed: number; // user deg/s
  presentLoad: number; // user %
  presentVoltage: number; // V
  presentTemperature: number; // deg C
  presentCurrent: number; // A
}

export interface MotorCommands {
  goalPosition: number; // user deg
  movingSpeed: number; // deg/s, >= 0; 0 = as fast as the servo goes
  torqueLimit: number; // %
  compliant: boolean;
  pid: [number, number, number]; // Kp, Ki, Kd
  complianceMargin: [number, number];
  complianceSlope: [number, number];
  led: LedColour;
  controlMode: number;
}

export type CommandName = keyof MotorCommands;

export class Motor {
  readonly name: string;
  readonly id: number;
  readonly config: MotorConfig;
  readonly spec: ModelSpec;
  readonly frame: AngleFrame;
  readonly registers: readonly MotorRegister[];
  /** User-frame limits as pypot reports them (lower > upper for indirect motors). */
  readonly lowerLimit: number;
  readonly upperLimit: number;
  /** min/max of the two, for clamping. */
  readonly minAngle: number;
  readonly maxAngle: number;

  readonly state: MotorState = {
    presentPosition: 0,
    presentSpeed: 0,
    presentLoad: 0,
    presentVoltage: 0,
    presentTemperature: 0,
    presentCurrent: 0,
  };
  readonly commands: MotorCommands;
  /** Commands changed since the last bus write. */
  readonly dirty = new Set<CommandName>();
  /** Set when the last bus exchange with this motor failed; cleared when it answers again. */
  fault: string | undefined;
  /** 'safe' compliance (pypot SafeCompliance): compliant only while inside the angle limits. */
  safeCompliance = false;
  /** Safe compliance is holding the motor stiff because it left its limits. */
  safeHold = false;
  /** The moving speed the goal_speed mode replaced, given back when the mode ends (undefined outside it). */
  speedBeforeGoalSpeed: number | undefined;

  constructor(config: MotorConfig, spec: ModelSpec) {
    this.name = config.name;
    this.id = config.id;
    this.config = config;
    this.spec = spec;
    this.frame = config;
    this.registers = motorRegisters(spec);
    this.lowerLimit = rawToUser(config, config.angleLimit[0]);
    this.upperLimit = rawToUser(config, config.angleLimit[1]);
    this.minAngle = Math.min(this.lowerLimit, this.upperLimit);
    this.maxAngle = Math.max(this.lowerLimit, this.upperLimit);
    this.commands = {
      goalPosition: 0,
      movingSpeed: 0,
      torqueLimit: 100,
      compliant: true,
      pid: [4, 0, 0],
      complianceMargin: [1, 1],
      complianceSlope: [32, 32],
      led: 'off',
      controlMode: 2,
    };
  }

  hasRegister(reg: string): reg is MotorRegister {
    return (this.registers as readonly string[]).includes(reg);
  }

  clampAngle(userDeg: number): number {
    return Math.min(this.maxAngle, Math.max(this.minAngle, userDeg));
  }

  set<K extends CommandName>(name: K, value: MotorCommands[K]): void {
    this.commands[name] = value;
    this.dirty.add(name);
  }

  /** Leaves the goal_speed mode, if on: the moving speed it took is given back. */
  endGoalSpeed(): void {
    if (this.speedBeforeGoalSpeed === undefined) return;
    this.set('movingSpeed', this.speedBeforeGoalSpeed);
    this.speedBeforeGoalSpeed = undefined;
  }

  /** Raw-frame degrees of a user angle (for the bus). */
  toRaw(userDeg: number): number {
    return userToRaw(this.frame, userDeg);
  }

  toUser(rawDeg: number): number {
    return rawToUser(this.frame, rawDeg);
  }
}
