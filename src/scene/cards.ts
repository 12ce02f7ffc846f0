/**
 * The marker cards of the twin's world at run time: where each one is now and where it rests when put away.
 * Poses are in the URDF root link's frame (metres, radians); the card's printed face looks along its +z.
 * Browser-safe (no node: imports): the web view shows the same cards.
 */
import { notFound } from '../core/errors.ts';
import type { CardConfig } from '../config/robot-config.ts';
import type { Vec3 } from '../urdf/types.ts';

export interface CardPose {
  readonly xyz: Vec3;
  readonly rpy: Vec3;
}

export interface CardState extends CardPose {
  readonly name: string;
  readonly id: number;
  /** Side of the printed square including its white margin, metres. */
  readonly size: number;
  /** Its resting place out of the camera's view (the robot config's pose). */
  readonly home: CardPose;
}

export class CardTable {
  readonly #cards = new Map<string, CardState>();
  readonly #listeners = new Set<(card: CardState) => void>();

  constructor(cards: readonly CardConfig[]) {
    for (const c of cards) {
      const home = { xyz: c.xyz, rpy: c.rpy };
      this.#cards.set(c.name, { name: c.name, id: c.id, size: c.size, home, ...home });
    }
  }

  list(): CardState[] {
    return [...this.#cards.values()];
  }

  /** The card called `name`; a RobotError 404 naming the cards there are otherwise. */
  get(name: string): CardState {
    const card = this.#cards.get(name);
    if (!card)
      throw notFound(
        `no card called "${name}"`,
        'GET /sim/cards/list.json lists the cards of this world',
        this.#cards.size ? `cards: ${[...this.#cards.keys()].join(', ')}` : 'this world has no cards',
      );
    return card;
  }

  /** Puts a card at a pose (root-link frame). */
  place(name: string, pose: CardPose): CardState {
    const card = { ...this.get(name), xyz: pose.xyz, rpy: pose.rpy };
    this.#cards.set(name, card);
    for (const listener of this.#listeners) listener(card);
    return card;
  }

  /** Back to its resting place, out of view. */
  putAway(name: string): CardState {
    return this.place(name, this.get(name).home);
  }

  /** Calls `listener` whenever a card moves, until the returned function is called. */
  onChange(listener: (card: CardState) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
