/**
 * A waiting room shared by tenants, served in turn (issue 31: one key's burst filled the espeak
 * queue and the other organizations waited behind it, or were refused).
 *
 * Tenants are paths, outermost first (the server: organization, API key, socket; see
 * {@link tenantPath}). Every level is served by deficit round-robin (Shreedhar & Varghese, 1995):
 * the tenants with items waiting take turns, each turn worth {@link FairQueueOptions.quantum} units
 * of cost, so a tenant with long items gets as much work per round as one with short ones, and a
 * tenant with one item waiting waits at most one turn of each other tenant. Within a tenant, items
 * leave in the order they came.
 *
 * The room holds {@link FairQueueOptions.capacity} items. When it is full, a newcomer takes the
 * place of the NEWEST item of the tenant holding the most (at each level, from the top: the
 * organization with most, then its key with most, then its socket with most) when that tenant holds
 * at least two more than the newcomer's; otherwise the newcomer itself is refused. So a tenant past
 * its share (the room divided among the tenants waiting) is the one refused, never another.
 *
 * Memory: a node per tenant with items waiting, removed when its last item leaves.
 */
import { describeValue, optionsArg } from '../util/args.js';
import { VoicewireError } from '../util/errors.js';

/** A tenant: path segments, outermost first. `[]` is the anonymous tenant. */
export type TenantPath = readonly string[];

/**
 * The path of an engine config's `tenant` string (segments separated by `/`, outermost first;
 * src/sessions/engine.ts). Undefined or empty: the anonymous tenant.
 */
export function tenantPath(tenant: string | undefined): TenantPath {
  if (tenant !== undefined && typeof tenant !== 'string') throw new VoicewireError('INVALID_ARGUMENT', `an engine config's tenant must be a string, got ${describeValue(tenant)}`);
  return tenant === undefined || tenant === '' ? [] : tenant.split('/');
}

/** Options of {@link FairQueue}. */
export interface FairQueueOptions {
  /** Items that may wait at once, all tenants together. Default `Infinity`. */
  capacity?: number;
  /** Cost a tenant may spend per turn (deficit round-robin's quantum). Default 1 (one item per turn when every item costs 1). */
  quantum?: number;
}

/** An item that lost its place in a full room: the newcomer refused, or an item pushed out. */
export interface Displaced<T> {
  item: T;
  tenant: TenantPath;
  /** Items its tenant held at the level where it lost (with it). */
  held: number;
  /** That level's share of the room: capacity over the tenants waiting there (rounded down, at least 1). */
  share: number;
}

interface Entry<T> {
  item: T;
  cost: number;
  tenant: TenantPath;
}

/**
 * One member of a round-robin ring: a tenant (its members are its sub-tenants and, when items
 * name it exactly, its own leaf), or a leaf holding items in arrival order.
 */
class Node<T> {
  readonly children = new Map<string, Node<T>>();
  /** The leaf of the items that name this tenant exactly (a tenant with sub-tenants too). */
  leaf: Node<T> | undefined;
  /** Members with items waiting, in round-robin order (the head has the turn). Empty for a leaf. */
  readonly ring: Node<T>[] = [];
  /** A leaf's items, oldest first (`head` skips those taken). */
  items: Entry<T>[] = [];
  head = 0;
  /** Items in this subtree. */
  count = 0;
  deficit = 0;
  /** As the head of its parent's ring, it has received this turn's quantum. */
  inTurn = false;

  constructor(
    /** Its key in the parent's `children`; undefined for a leaf. */
    readonly name: string | undefined,
    readonly parent: Node<T> | undefined,
  ) {}

  get isLeaf(): boolean {
    return this.name === undefined && this.parent !== undefined;
  }
}

/**
 * A hierarchical fair queue: see the module comment.
 * @typeParam T the items (jobs) waiting.
 */
export class FairQueue<T> {
  private readonly root = new Node<T>('', undefined);
  private capacity: number;
  private readonly quantum: number;

  constructor(options: FairQueueOptions = {}) {
    options = optionsArg(options, 'FairQueue: options');
    this.capacity = options.capacity ?? Infinity;
    this.quantum = options.quantum ?? 1;
    if (!(this.capacity === Infinity || (Number.isInteger(this.capacity) && this.capacity >= 1))) {
      throw new VoicewireError('INVALID_ARGUMENT', `FairQueue: capacity must be an integer ≥ 1 or Infinity, got ${describeValue(options.capacity)}`);
    }
    if (!(typeof this.quantum === 'number' && Number.isFinite(this.quantum) && this.quantum > 0)) {
      throw new VoicewireError('INVALID_ARGUMENT', `FairQueue: quantum must be a finite number > 0, got ${describeValue(options.quantum)}`);
    }
  }

  /** Items waiting, all tenants together. */
  get size(): number {
    return this.root.count;
  }

  /** The room's size. */
  get limit(): number {
    return this.capacity;
  }

  /** Changes the room's size; items above a smaller one stay until they leave (each newcomer then pushes one out or is refused). */
  setLimit(capacity: number): void {
    if (!(capacity === Infinity || (Number.isInteger(capacity) && capacity >= 1))) throw new VoicewireError('INVALID_ARGUMENT', `FairQueue.setLimit: capacity must be an integer ≥ 1 or Infinity, got ${describeValue(capacity)}`);
    this.capacity = capacity;
  }

  /** Items waiting of `tenant` and its sub-tenants. */
  waiting(tenant: TenantPath): number {
    let n: Node<T> | undefined = this.root;
    for (const seg of tenant) n = n?.children.get(seg);
    return n?.count ?? 0;
  }

  /**
   * Queues `item` for `tenant` (`cost` units of work, default 1). Returns undefined when it found a
   * place, else the item that lost its place: `item` itself (refused: its tenant holds the most),
   * or an item of a tenant past its share, pushed out (the caller refuses it).
   */
  push(tenant: TenantPath, item: T, cost = 1): Displaced<T> | undefined {
    if (!(typeof cost === 'number' && Number.isFinite(cost) && cost > 0)) throw new VoicewireError('INVALID_ARGUMENT', `FairQueue.push: cost must be a finite number > 0, got ${describeValue(cost)}`);
    let out: Displaced<T> | undefined;
    if (this.root.count >= this.capacity) {
      out = this.displace(tenant, item);
      if (out.item === item) return out;
    }
    const leaf = this.leafOf(tenant);
    leaf.items.push({ item, cost, tenant: [...tenant] });
    this.join(leaf);
    return out;
  }

  /**
   * Puts `item` back at the HEAD of `tenant`'s items (one taken out and interrupted: it keeps its
   * place in its tenant's order). Never refused: the place it had is the one it takes back.
   */
  pushFront(tenant: TenantPath, item: T, cost = 1): void {
    if (!(typeof cost === 'number' && Number.isFinite(cost) && cost > 0)) throw new VoicewireError('INVALID_ARGUMENT', `FairQueue.pushFront: cost must be a finite number > 0, got ${describeValue(cost)}`);
    const leaf = this.leafOf(tenant);
    const e = { item, cost, tenant: [...tenant] };
    if (leaf.head > 0) leaf.items[--leaf.head] = e;
    else leaf.items.unshift(e);
    this.join(leaf);
  }

  /** The leaf of `tenant`'s own items, made (with the tenants above it) when missing. */
  private leafOf(tenant: TenantPath): Node<T> {
    let n = this.root;
    for (const seg of tenant) {
      let c = n.children.get(seg);
      if (c === undefined) {
        c = new Node<T>(seg, n);
        n.children.set(seg, c);
      }
      n = c;
    }
    return (n.leaf ??= new Node<T>(undefined, n));
  }

  /** Counts a new item of `leaf` up the tree; a member joins the end of its parent's ring with its first item. */
  private join(leaf: Node<T>): void {
    for (let m: Node<T> = leaf; m.parent !== undefined; m = m.parent) {
      if (m.count === 0) m.parent.ring.push(m);
      m.count++;
    }
    this.root.count++;
  }

  /** The next item, tenants in turn; undefined when none waits. */
  shift(): T | undefined {
    if (this.root.count === 0) return undefined;
    const leaf = this.settle(this.root);
    const e = leaf.items[leaf.head]!;
    leaf.items[leaf.head++] = undefined as unknown as Entry<T>;
    if (leaf.head > 32 && leaf.head * 2 > leaf.items.length) {
      leaf.items = leaf.items.slice(leaf.head);
      leaf.head = 0;
    }
    // Every member on the way pays the item's cost and loses one item.
    for (let n: Node<T> | undefined = leaf; n !== undefined; n = n.parent) {
      n.count--;
      n.deficit -= e.cost;
    }
    this.prune(leaf);
    return e.item;
  }

  /** Takes every item out (in the order they would have left), e.g. to fail them all. */
  clear(): T[] {
    const out: T[] = [];
    while (this.root.count > 0) out.push(this.shift()!);
    return out;
  }

  /**
   * The leaf whose oldest item leaves next under `n`: deficit round-robin over `n`'s ring, the
   * head member served while its deficit covers the cost of what it would give next. Only turn
   * bookkeeping changes here (deficits, ring order), so calling it again gives the same leaf.
   */
  private settle(n: Node<T>): Node<T> {
    if (n.isLeaf) return n;
    for (;;) {
      const c = n.ring[0]!;
      if (!c.inTurn) {
        c.deficit += this.quantum;
        c.inTurn = true;
      }
      const leaf = this.settle(c);
      if (c.deficit >= leaf.items[leaf.head]!.cost) return leaf;
      c.inTurn = false;
      n.ring.push(n.ring.shift()!);
    }
  }

  /** Takes members left without items out of their rings (their deficit with them), from `leaf` up. */
  private prune(leaf: Node<T>): void {
    for (let n: Node<T> = leaf; n.parent !== undefined && n.count === 0; n = n.parent) {
      const p = n.parent;
      p.ring.splice(p.ring.indexOf(n), 1);
      if (n.isLeaf) p.leaf = undefined;
      else p.children.delete(n.name!);
    }
  }

  /** In a full room: who loses its place to a newcomer of `tenant` (see the module comment). */
  private displace(tenant: TenantPath, item: T): Displaced<T> {
    let n = this.root;
    for (let depth = 0; ; depth++) {
      // The newcomer's member at this level: its sub-tenant, or its own leaf at the end of its path.
      const mine = depth < tenant.length ? n.children.get(tenant[depth]!) : n.leaf;
      const mineCount = mine?.count ?? 0;
      let big: Node<T> | undefined;
      for (const c of n.ring) if (big === undefined || c.count > big.count) big = c;
      const share = Math.max(1, Math.floor(this.capacity / (n.ring.length + (mineCount === 0 ? 1 : 0))));
      if (big !== undefined && big !== mine && big.count >= mineCount + 2) return this.evictNewest(big, share);
      // The newcomer's side holds (nearly) the most: the contest goes on inside it, or it is refused.
      if (mine === undefined || mine.isLeaf) return { item, tenant: [...tenant], held: mineCount + 1, share };
      n = mine;
    }
  }

  /** Pushes out the newest item of the biggest member under `m` (down to a leaf). */
  private evictNewest(m: Node<T>, share: number): Displaced<T> {
    const held = m.count;
    let leaf = m;
    while (!leaf.isLeaf) {
      let big = leaf.ring[0]!;
      for (const c of leaf.ring) if (c.count > big.count) big = c;
      leaf = big;
    }
    const e = leaf.items.pop()!;
    for (let p: Node<T> | undefined = leaf; p !== undefined; p = p.parent) p.count--;
    this.prune(leaf);
    return { item: e.item, tenant: e.tenant, held, share };
  }
}

/**
 * The `ENGINE_BUSY` error of an item that lost its place in a full room, naming the share its
 * tenant passed (`what`: the queue, e.g. `espeak-ng (WebAssembly)`; `items`: what waits, e.g.
 * `syntheses`).
 */
export function shareExceeded(what: string, items: string, capacity: number, d: Displaced<unknown>): VoicewireError {
  return new VoicewireError(
    'ENGINE_BUSY',
    `${what} has ${capacity} ${items} waiting and this caller holds ${d.held} of them, past its share of ${d.share} while others wait: retry later`,
  );
}
