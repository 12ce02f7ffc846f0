/**
 * What a custom primitive module sees (docs/primitives.md). A module in the primitives folder default-exports
 * either a factory `(ctx, lib) => Primitive` or a subclass of Primitive whose constructor takes the context.
 * The factory form needs no import at run time: `lib` carries the classes, so the file works from any folder.
 */
import { badRequest, conflict, notFound } from '../core/errors.ts';
import { Primitive, type PrimitiveContext } from './primitive.ts';
import { Sinus } from './sinus.ts';

export type {
  MethodSpec,
  ParamSpec,
  PrimitiveContext,
  PrimitiveOptions,
  PrimitiveRegister,
  PrimitiveState,
  PropertySpec,
  ValueType,
} from './primitive.ts';
export { Primitive } from './primitive.ts';
export { Sinus, type SinusOptions } from './sinus.ts';

export interface PrimitiveLibrary {
  readonly Primitive: typeof Primitive;
  readonly Sinus: typeof Sinus;
  /** Typed errors: throw them from a property setter or a method to answer 400, 409 or 404. */
  readonly errors: {
    readonly badRequest: typeof badRequest;
    readonly conflict: typeof conflict;
    readonly notFound: typeof notFound;
  };
}

export type PrimitiveFactory = (
  ctx: PrimitiveContext,
  lib: PrimitiveLibrary,
) => Primitive | Promise<Primitive>;

export const primitiveLibrary: PrimitiveLibrary = Object.freeze({
  Primitive,
  Sinus,
  errors: Object.freeze({ badRequest, conflict, notFound }),
});
