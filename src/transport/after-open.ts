/**
 * An async iterable over an iterator that is only available once something was opened, such as
 * a RunSSE handler's agent stream: `async *handler() { const s = await open(); yield* s.read() }`
 * without the generator. A delegating generator costs a promise hop per message on every message
 * the stream ever sends, and a generator object and its closures per open stream (issue #19); this
 * adds nothing per message once opened: `next` is the inner iterator's `next`.
 *
 * As with the generator it replaces: `open` runs on the first `next`; if it rejects, that `next`
 * rejects and the iteration is over; `return` before the first `next` opens nothing; `return` and
 * `throw` after it are the inner iterator's.
 */
export function afterOpen<T>(open: () => Promise<AsyncIterator<T>>): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      let inner: AsyncIterator<T> | undefined;
      let opening: Promise<AsyncIterator<T>> | undefined;
      let closed = false;
      const done = (value?: unknown): IteratorResult<T> =>
        ({ done: true, value }) as IteratorResult<T>;
      const opened = (): Promise<AsyncIterator<T>> => {
        opening ??= open().then(
          (iterator) => {
            inner = iterator;
            return iterator;
          },
          (error: unknown) => {
            closed = true;
            throw error;
          },
        );
        return opening;
      };
      return {
        next() {
          if (inner !== undefined) return inner.next();
          if (closed) return Promise.resolve(done());
          return opened().then((iterator) => iterator.next());
        },
        async return(value?: unknown) {
          if (opening === undefined) {
            closed = true;
            return done(value);
          }
          const iterator = await opened().catch(() => undefined);
          if (iterator?.return === undefined) return done(value);
          return iterator.return(value);
        },
        async throw(error?: unknown) {
          if (opening === undefined) {
            closed = true;
            throw error;
          }
          const iterator = await opened();
          if (iterator.throw === undefined) throw error;
          return iterator.throw(error);
        },
      };
    },
  };
}
