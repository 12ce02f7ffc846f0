/**
 * Value coercion at a primitive's edges: REST values checked against the types properties and method parameters
 * declare, and the values a primitive requests for a register checked against that register.
 */
import { badRequest } from '../core/errors.ts';
import { describe, parseBoolean, parseNumber } from '../core/values.ts';
import { LED_COLOURS, type LedColour } from '../dynamixel/registers.ts';

/** Types a property or a method parameter can declare; REST input is checked against them. */
export type ValueType = 'number' | 'boolean' | 'string' | 'number[]' | 'string[]';

export const VALUE_TYPES: readonly ValueType[] = ['number', 'boolean', 'string', 'number[]', 'string[]'];

/** Registers a primitive may request. */
export type PrimitiveRegister =
  'goal_position' | 'moving_speed' | 'torque_limit' | 'compliant' | 'led' | 'pid';

export type RequestValue = number | boolean | LedColour | readonly [number, number, number];

/** A requested value checked against its register: 400 for a value of the wrong type. */
export function checkRequest(register: PrimitiveRegister, value: unknown, what: string): RequestValue {
  switch (register) {
    case 'goal_position':
    case 'moving_speed':
    case 'torque_limit':
      return parseNumber(value, what);
    case 'compliant':
      return parseBoolean(value, what);
    case 'led':
      if (typeof value === 'string' && (LED_COLOURS as readonly string[]).includes(value))
        return value as LedColour;
      throw badRequest(`${what} must be a colour name`, `one of ${LED_COLOURS.join(', ')}`, describe(value));
    case 'pid': {
      if (!Array.isArray(value) || value.length !== 3)
        throw badRequest(`${what} must be [Kp, Ki, Kd]`, 'three numbers', describe(value));
      const [kp, ki, kd] = value.map((v, i) => parseNumber(v, `${what}[${i}]`));
      return [kp!, ki!, kd!];
    }
  }
}

/**
 * Checks a REST value against a declared type: numbers also as numeric strings, booleans also as "true"/"false"/1/0
 * (docs/reference/contract.md 2), arrays element by element (a comma-separated string works too). 400 otherwise.
 */
export function coerceValue(type: ValueType, value: unknown, what: string): unknown {
  switch (type) {
    case 'number':
      return parseNumber(value, what);
    case 'boolean':
      return parseBoolean(value, what);
    case 'string':
      if (typeof value === 'string') return value;
      throw badRequest(`${what} must be a string`, 'send a JSON string', `got ${describe(value)}`);
    case 'number[]':
    case 'string[]': {
      const list = typeof value === 'string' ? value.split(',').map((s) => s.trim()) : value;
      if (!Array.isArray(list))
        throw badRequest(
          `${what} must be an array`,
          type === 'number[]' ? 'send for example [10, 20]' : 'send for example ["m1", "m2"]',
          `got ${describe(value)}`,
        );
      return list.map((v, i) => coerceValue(type === 'number[]' ? 'number' : 'string', v, `${what}[${i}]`));
    }
  }
}
