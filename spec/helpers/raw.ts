import net from 'node:net';

/**
 * One raw TCP connection to a loopback HTTP server: bytes written exactly as given, bytes read
 * exactly as they arrive (one character per byte), responses cut out by their `Content-Length`.
 * For what an HTTP client library would not send (a Content-Length it never honours, two Host
 * lines, bytes that are not UTF-8) and for watching when the server closes the connection.
 */
export class RawConnection {
  /** Everything received so far, one character per byte (latin1). */
  text = '';
  /** Set when the connection closed (either side, or an error such as a reset). */
  closed = false;
  /** Milliseconds from connect to close. */
  closedAfter = Number.NaN;
  readonly #socket: net.Socket;
  readonly #started = Date.now();
  #taken = 0;
  #trickle: NodeJS.Timeout | undefined;
  #waiters: (() => void)[] = [];

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.text += chunk;
      this.#wake();
    });
    // A server that closes while bytes are still coming may reset the connection: that is a close too.
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.closedAfter = Date.now() - this.#started;
      clearInterval(this.#trickle);
      this.#wake();
    });
  }

  /** Connects to `127.0.0.1:port`. */
  static connect(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.off('error', reject);
        resolve(new RawConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  /** Writes `bytes` (a string is sent one byte per character, latin1). */
  write(bytes: string | Uint8Array): void {
    if (!this.#socket.destroyed) this.#socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
  }

  /** Writes one byte of `byte` every `everyMs` milliseconds until the connection closes or {@link destroy}. */
  trickle(everyMs: number, byte = 'x'): void {
    clearInterval(this.#trickle);
    this.#trickle = setInterval(() => this.write(byte), everyMs);
  }

  /**
   * The next whole response (head and a body of its `Content-Length`), its `Date` value replaced by
   * `<date>`; fails after `ms`, or when the connection closes before it is complete.
   */
  async response(ms = 2000): Promise<string> {
    const deadline = Date.now() + ms;
    for (;;) {
      const rest = this.text.slice(this.#taken);
      const headEnd = rest.indexOf('\r\n\r\n');
      if (headEnd !== -1) {
        const length = /\r\ncontent-length: *(\d+)\r\n/i.exec(rest.slice(0, headEnd + 2));
        const end = headEnd + 4 + (length === null ? 0 : Number(length[1]));
        if (rest.length >= end) {
          this.#taken += end;
          return withoutDate(rest.slice(0, end));
        }
      }
      if (this.closed) throw new Error(`the connection closed before a whole response; got ${JSON.stringify(rest)}`);
      if (!(await this.#wait(deadline))) throw new Error(`no whole response within ${ms} ms; got ${JSON.stringify(rest)}`);
    }
  }

  /** Waits for the first byte from the server; fails after `ms` or when the connection closes with nothing. */
  async received(ms = 2000): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.text === '') {
      if (this.closed) throw new Error('the connection closed with nothing received');
      if (!(await this.#wait(deadline))) throw new Error(`nothing received within ${ms} ms`);
    }
  }

  /** True once the server has closed the connection, false if it is still open after `ms`. */
  async closesWithin(ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!this.closed) if (!(await this.#wait(deadline))) return false;
    return true;
  }

  /** Closes the connection from this side and stops any trickle. */
  destroy(): void {
    clearInterval(this.#trickle);
    this.#socket.destroy();
  }

  /** Resolves true at the next arrival or close, false at `deadline`. */
  #wait(deadline: number): Promise<boolean> {
    const left = deadline - Date.now();
    if (left <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), left);
      this.#waiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}

/** A response with its `Date` header's value replaced by `<date>`, so that it can be compared byte for byte. */
export function withoutDate(response: string): string {
  return response.replace(/\r\ndate: [^\r\n]*\r\n/i, (line) => `${line.slice(0, line.indexOf(':') + 1)} <date>\r\n`);
}
