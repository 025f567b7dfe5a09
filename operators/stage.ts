import { Observable, type OperatorFunction, type Subscriber } from 'rxjs';
import { BareSubscriber, type SubscriptionReceiver } from '../lib/subscribers.js';
import { TopicsObservable } from '../lib/notifications.js';

/**
 * Where a stage hands its output: the next stage, or the end of the chain (the subscriber of the
 * resulting Observable).
 * @internal
 */
export interface Downstream<T> {
  push(value: T): void;
  end(): void;
  fail(error: unknown): void;
}

/**
 * One operator's logic, written once, as a small object on the per-frame path. Each public
 * operator runs its stage alone (`src.pipe(keepAlive(…))`); a composite operator (`listenPipeline`,
 * `sessionPipeline`) runs several stages under one subscriber, which is the same code fused: frames
 * go from stage to stage by a direct call, and the stream holds one subscriber instead of one per
 * operator.
 *
 * The life of a stage, in the order of an RxJS subscription of the chain: `open()` (last stage
 * first: what a stage subscribes before its source, like a demand signal or a close trigger),
 * then the source is subscribed, then `opened()` (first stage first: what a stage does once its
 * source's subscribe has returned, like an acknowledgment), then `push`/`end`/`fail` from
 * upstream, and `dispose()` exactly when the stage's part of the stream is torn down (the chain
 * was unsubscribed, or a stage below ended it with {@link StageChain.cut}). A stage that ends
 * the stream calls `this.out.end()` / `this.out.fail()`.
 * @internal
 */
export abstract class Stage<In = unknown, Out = In> implements Downstream<In> {
  /** The next stage, or the chain's end. Set when the chain is linked. */
  out!: Downstream<Out>;

  /**
   * Told the chain it runs in when the chain is linked; a stage that ends everything above it (see
   * {@link StageChain.cut}) or leaves it keeps it. Nothing by default: an idle stream holds no more
   * than it needs.
   */
  link(_chain: StageChain): void {}

  open(): void {}
  opened(): void {}
  abstract push(value: In): void;
  end(): void {
    this.out.end();
  }
  fail(error: unknown): void {
    this.out.fail(error);
  }
  dispose(): void {}
}

/**
 * A stage whose own resources (a clock entry, restores in flight) end with its upstream: `end`
 * and `fail` dispose them before passing the end on, as a teardown would.
 * @internal
 */
export abstract class DisposingStage<In = unknown, Out = In> extends Stage<In, Out> {
  override end(): void {
    this.dispose();
    this.out.end();
  }

  override fail(error: unknown): void {
    this.dispose();
    this.out.fail(error);
  }
}

/**
 * A chain of stages between a source subscription and a sink. Added to the sink (the subscriber
 * of the resulting Observable) as its teardown: when the sink ends or is unsubscribed, every stage
 * is disposed and the source unsubscribed. The stages are linked through their `out` (the last
 * one's is the chain): the chain holds the first one and no list of them.
 * @internal
 */
export class StageChain implements Downstream<unknown>, SubscriptionReceiver<unknown, undefined> {
  /** The first stage still in the chain, or the chain itself when none is. */
  private first: Downstream<unknown>;
  private readonly sink: Subscriber<any>;
  private source: SourceRegistration | undefined;
  /** Torn down: the sink ended or was unsubscribed. */
  private done = false;
  /** A stage ended everything above it (see {@link StageChain.cut}): the source is gone. */
  private severed = false;
  /** How many stages from the start have left the chain (disposed, or done with, see {@link StageChain.leave}). */
  private gone = 0;

  /**
   * Links `stages` (in order) between `source` and `sink` and runs them: opens the stages,
   * subscribes `source`, tells the stages it is subscribed. `source` is an Observable, or a
   * function that registers an entry with `next` (and `complete`) directly (a hub registration, a
   * legacy session's feed: no subscriber in between) and returns how to undo it.
   */
  static run(stages: readonly Stage<any, any>[], sink: Subscriber<any>, source: StageSource): void {
    new StageChain(stages, sink).start(stages, source);
  }

  private constructor(stages: readonly Stage<any, any>[], sink: Subscriber<any>) {
    this.first = stages[0] ?? this;
    this.sink = sink;
    for (let i = 0; i < stages.length; i++) {
      const stage = stages[i]!;
      stage.link(this);
      stage.out = i + 1 < stages.length ? stages[i + 1]! : this;
    }
  }

  private start(stages: readonly Stage<any, any>[], source: StageSource): void {
    this.sink.add(this);
    for (let i = stages.length - 1; i >= 0; i--) {
      stages[i]!.open();
      // Ended while opening (a close trigger that fires at once): the source is never subscribed.
      if (this.done || this.severed) return;
    }
    if (typeof source === 'function') {
      this.source = source(this);
    } else {
      const subscriber = new BareSubscriber<unknown>(this, undefined);
      this.source = subscriber;
      source.subscribe(subscriber);
    }
    for (let i = 0; i < stages.length; i++) {
      if (this.done) return;
      if (i >= this.gone) stages[i]!.opened();
    }
  }

  /**
   * Stops everything above `stage`: the stages before it are disposed and the source is
   * unsubscribed (or told it is cut, see {@link SourceRegistration}); that stage and those after it
   * go on (to write closing frames, say).
   */
  cut(stage: Stage<any, any>): void {
    this.severed = true;
    const source = this.source;
    if (source?.cut !== undefined) source.cut();
    else source?.unsubscribe();
    this.disposeUntil(stage);
  }

  /** A value from the source (see {@link StageChain.run}). */
  next(value: unknown): void {
    if (this.done || this.severed) return;
    this.first.push(value);
  }

  /** The end of the source: the stages end in order (see {@link StageChain.run}). */
  complete(): void {
    if (this.done || this.severed) return;
    this.first.end();
  }

  /** The source failed. */
  error(error: unknown): void {
    if (this.done || this.severed) return;
    this.first.fail(error);
  }

  // The source, when it is an Observable, through its BareSubscriber.
  onValue(value: unknown): void {
    this.next(value);
  }

  onError(error: unknown): void {
    this.error(error);
  }

  onComplete(): void {
    this.complete();
  }

  /**
   * `stage` has nothing left to do (a priming event that went out as the stream opened): if it is
   * the first stage, the frames skip it from now on and the chain lets go of it. A stage further
   * down stays, passing frames on.
   */
  leave(stage: Stage<any, any>): void {
    if (this.first !== stage) return;
    this.first = stage.out;
    this.gone++;
  }

  // The end of the chain: the last stage's output goes to the sink.
  push(value: unknown): void {
    this.sink.next(value);
  }

  end(): void {
    this.sink.complete();
  }

  fail(error: unknown): void {
    this.sink.error(error);
  }

  /** The sink ended or was unsubscribed: everything goes. */
  unsubscribe(): void {
    if (this.done) return;
    this.done = true;
    this.source?.unsubscribe();
    this.disposeUntil(this);
  }

  /** Disposes the stages still in the chain, in order, up to (not including) `until`. */
  private disposeUntil(until: Downstream<unknown>): void {
    while (this.first !== until && this.first !== this) {
      const current = this.first as Stage<any, any>;
      // Out of the chain before it is disposed: a teardown that re-enters the chain does not dispose it twice.
      this.first = current.out;
      this.gone++;
      current.dispose();
    }
  }
}


/**
 * What a source registered by a function returns (see {@link StageChain.run}): `unsubscribe` is
 * called when the chain is torn down; `cut`, if it has one, is called instead when a stage ends
 * everything above it while the stream goes on writing what it holds (`unsubscribe` follows at the
 * teardown). A registration can so also be what the stream releases when it has ended. @internal
 */
export interface SourceRegistration {
  unsubscribe(): void;
  cut?(): void;
}

/** What a chain's source can be (see {@link StageChain.run}). @internal */
export type StageSource = Observable<unknown> | ((entry: { next(value: unknown): void; complete(): void }) => SourceRegistration);

/**
 * The Observable a stage operator returns: its source and how to make its stages. Piping another
 * stage operator onto it fuses the two at assembly (as Reactor and Akka Streams fuse operators):
 * the result runs both operators' stages, in order, under one subscriber. The stages are the
 * operators' own code, so the frames and their timing are the same as with one subscriber per
 * operator (spec/operators/pipeline.property.spec.ts plays random scripts through both).
 * @internal
 */
export class StageObservable<T> extends Observable<T> {
  constructor(
    readonly upstream: StageSource,
    readonly stages: () => readonly Stage<any, any>[],
  ) {
    super();
  }

  // Observable's own (internal, untyped) subscribe hook: no subscribe function, hence no closure.
  protected _subscribe(subscriber: Subscriber<T>): undefined {
    StageChain.run(this.stages(), subscriber, this.upstream);
    return undefined;
  }
}

/**
 * The operator that runs the stages `create()` returns, one set per subscription, as one
 * subscriber between the source and the result; fused with the stage operators before it.
 * @internal
 */
export function stageOperator<In, Out>(create: () => readonly Stage<any, any>[]): OperatorFunction<In, Out> {
  return (source) => {
    if (source instanceof StageObservable) {
      const before = source.stages;
      return new StageObservable<Out>(source.upstream, () => before().concat(create()));
    }
    // The hub's notifications: the first stage is registered on the topics itself.
    if (source instanceof TopicsObservable) return new StageObservable<Out>((entry) => source.attach(entry), create);
    return new StageObservable<Out>(source, create);
  };
}
