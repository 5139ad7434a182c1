/**
 * The requests of one socket, keyed by `client_req_id` (or `null`), as a persistent map: `set`
 * and `delete` return a new map in O(log n) and leave the old one intact, so the session machines
 * stay pure (`transition(state, event)` may be called twice on one state) without copying the
 * whole map on every step (issue 11 §2: 10,000 open ids made each `audio` message 2.6 ms).
 *
 * A balanced binary tree (AVL, path copying) ordered by the key itself, not a hash table: ids are
 * chosen by the peer, and a hash they can collide would bring back the O(n) per message.
 * Iteration is in insertion order, like a `Map` (the socket machine aborts or ends requests in the
 * order they started): each entry carries its insertion number and iteration sorts by it, which
 * costs O(n log n) once per whole-socket step (close, end of stream), never per message.
 */
import { describeValue, functionArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';
import type { RequestKey } from './multiplex.js';

interface Node<V> {
  readonly key: RequestKey;
  readonly value: V;
  /** Insertion number: the entry's place in iteration order (kept when the value is replaced). */
  readonly seq: number;
  readonly left: Node<V> | null;
  readonly right: Node<V> | null;
  readonly height: number;
}

/** A key is a `client_req_id` string or `null` (no id); anything else could not be ordered. */
function checkKey(key: unknown): RequestKey {
  if (key !== null && typeof key !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `RequestMap: a key is a string or null, got ${describeValue(key)}`);
  return key;
}

/** `null` sorts before every string; strings by UTF-16 code units. */
function compare(a: RequestKey, b: RequestKey): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  return a < b ? -1 : 1;
}

const height = <V>(n: Node<V> | null): number => (n === null ? 0 : n.height);

function node<V>(key: RequestKey, value: V, seq: number, left: Node<V> | null, right: Node<V> | null): Node<V> {
  return { key, value, seq, left, right, height: Math.max(height(left), height(right)) + 1 };
}

function balance<V>(key: RequestKey, value: V, seq: number, left: Node<V> | null, right: Node<V> | null): Node<V> {
  const hl = height(left);
  const hr = height(right);
  if (hl > hr + 1) {
    const l = left!;
    if (height(l.left) >= height(l.right)) return node(l.key, l.value, l.seq, l.left, node(key, value, seq, l.right, right));
    const lr = l.right!;
    return node(lr.key, lr.value, lr.seq, node(l.key, l.value, l.seq, l.left, lr.left), node(key, value, seq, lr.right, right));
  }
  if (hr > hl + 1) {
    const r = right!;
    if (height(r.right) >= height(r.left)) return node(r.key, r.value, r.seq, node(key, value, seq, left, r.left), r.right);
    const rl = r.left!;
    return node(rl.key, rl.value, rl.seq, node(key, value, seq, left, rl.left), node(r.key, r.value, r.seq, rl.right, r.right));
  }
  return node(key, value, seq, left, right);
}

function insert<V>(n: Node<V> | null, key: RequestKey, value: V, seq: number): Node<V> {
  if (n === null) return node(key, value, seq, null, null);
  const c = compare(key, n.key);
  if (c === 0) return node(key, value, n.seq, n.left, n.right);
  if (c < 0) return balance(n.key, n.value, n.seq, insert(n.left, key, value, seq), n.right);
  return balance(n.key, n.value, n.seq, n.left, insert(n.right, key, value, seq));
}

function removeMin<V>(n: Node<V>): { min: Node<V>; rest: Node<V> | null } {
  if (n.left === null) return { min: n, rest: n.right };
  const { min, rest } = removeMin(n.left);
  return { min, rest: balance(n.key, n.value, n.seq, rest, n.right) };
}

function remove<V>(n: Node<V> | null, key: RequestKey): Node<V> | null {
  if (n === null) return null;
  const c = compare(key, n.key);
  if (c < 0) return balance(n.key, n.value, n.seq, remove(n.left, key), n.right);
  if (c > 0) return balance(n.key, n.value, n.seq, n.left, remove(n.right, key));
  if (n.left === null) return n.right;
  if (n.right === null) return n.left;
  const { min, rest } = removeMin(n.right);
  return balance(min.key, min.value, min.seq, n.left, rest);
}

function find<V>(n: Node<V> | null, key: RequestKey): Node<V> | null {
  while (n !== null) {
    const c = compare(key, n.key);
    if (c === 0) return n;
    n = c < 0 ? n.left : n.right;
  }
  return null;
}

/**
 * An immutable map of a socket's requests (see the module comment). Reads like a
 * `ReadonlyMap`; `set`/`delete` return the updated map.
 */
export class RequestMap<V> implements ReadonlyMap<RequestKey, V> {
  private static readonly EMPTY = new RequestMap<never>(null, 0, 0);

  /** The empty map. */
  static empty<V>(): RequestMap<V> {
    return RequestMap.EMPTY as RequestMap<V>;
  }

  private constructor(
    private readonly root: Node<V> | null,
    readonly size: number,
    /** Next insertion number. */
    private readonly seq: number,
  ) {}

  get(key: RequestKey): V | undefined {
    return find(this.root, checkKey(key))?.value;
  }

  has(key: RequestKey): boolean {
    return find(this.root, checkKey(key)) !== null;
  }

  /** This map with `key` set to `value` (a replaced entry keeps its place in iteration order). */
  set(key: RequestKey, value: V): RequestMap<V> {
    checkKey(key);
    const had = this.has(key);
    return new RequestMap(insert(this.root, key, value, this.seq), had ? this.size : this.size + 1, had ? this.seq : this.seq + 1);
  }

  /** This map without `key`. */
  delete(key: RequestKey): RequestMap<V> {
    if (!this.has(key)) return this;
    return this.size === 1 ? RequestMap.empty() : new RequestMap(remove(this.root, key), this.size - 1, this.seq);
  }

  /** Entries in insertion order. */
  private ordered(): Node<V>[] {
    const out: Node<V>[] = [];
    const stack: Node<V>[] = [];
    let n = this.root;
    while (n !== null || stack.length > 0) {
      while (n !== null) {
        stack.push(n);
        n = n.left;
      }
      const top = stack.pop()!;
      out.push(top);
      n = top.right;
    }
    if (out.length > 1) out.sort((a, b) => a.seq - b.seq);
    return out;
  }

  *entries(): MapIterator<[RequestKey, V]> {
    for (const n of this.ordered()) yield [n.key, n.value];
  }

  *keys(): MapIterator<RequestKey> {
    for (const n of this.ordered()) yield n.key;
  }

  *values(): MapIterator<V> {
    for (const n of this.ordered()) yield n.value;
  }

  [Symbol.iterator](): MapIterator<[RequestKey, V]> {
    return this.entries();
  }

  forEach(callback: (value: V, key: RequestKey, map: ReadonlyMap<RequestKey, V>) => void, thisArg?: unknown): void {
    functionArg(callback, 'RequestMap.forEach callback');
    for (const n of this.ordered()) callback.call(thisArg, n.value, n.key, this);
  }

  /** The only key, without sorting (routing by the single live request, §4.4). */
  first(): RequestKey | undefined {
    if (this.root === null) return undefined;
    if (this.size === 1) return this.root.key;
    return this.ordered()[0]!.key;
  }

  get [Symbol.toStringTag](): string {
    return 'RequestMap';
  }
}
