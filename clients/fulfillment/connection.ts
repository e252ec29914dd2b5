// One channel to the fulfillment service and the per-call rules every RPC follows: a fresh bearer
// token from the token file, a deadline, error classification, and retries only when the caller
// says the call is idempotent.
import * as fs from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { RetryClock, RetryPolicy, retry, systemClock } from "../retry";
import { classifyCallError, isTransient, UnauthenticatedError } from "./errors";

export type Transport =
  /** TLS with the CA bundle in caFile (system roots when absent). */
  | { kind: "tls"; caFile?: string; serverNameOverride?: string }
  /** Plaintext, for the loopback lab only. */
  | { kind: "plaintext" };

export interface ConnectionOptions {
  /** host:port of the internal (private API) endpoint. */
  address: string;
  transport: Transport;
  /** Read on every call: tokens rotate. */
  tokenFile: string;
  /** Per-attempt deadline; 30 s by default (OSAC-2135 §2 step 8). */
  deadlineMs?: number;
  /** Retry policy for idempotent calls. */
  retry?: Partial<RetryPolicy>;
  clock?: RetryClock;
  /** Told about every attempt once it ends: the method path and the gRPC status name ("OK", "UNAVAILABLE"). */
  onCall?: (method: string, code: string) => void;
  /** Largest response accepted; default 16 MiB (gRPC's 4 MiB is ~60 BMIs with large ignitions). Bigger list pages are split. */
  maxReceiveMessageBytes?: number;
}

export const DEFAULT_MAX_RECEIVE_MESSAGE_BYTES = 16 * 1024 * 1024;

export const DEFAULT_DEADLINE_MS = 30_000;

/** The serialisation half of a generated MethodDefinition. */
export interface UnaryMethod<Req, Res> {
  path: string;
  requestSerialize: (value: Req) => Buffer;
  responseDeserialize: (bytes: Buffer) => Res;
}

export interface CallOptions {
  /** Retry UNAVAILABLE/DEADLINE_EXCEEDED; only for calls that are safe to repeat. */
  idempotent: boolean;
  /** Extra request metadata, e.g. x-dry-run. */
  metadata?: Record<string, string>;
}

function channelCredentials(transport: Transport): grpc.ChannelCredentials {
  if (transport.kind === "plaintext") return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(transport.caFile ? fs.readFileSync(transport.caFile) : null);
}

export interface StreamHandlers<Res> {
  onOpen?: () => void;
  onMessage: (message: Res) => void;
  onEnd: (err: unknown) => void;
}

export interface OpenStream {
  /** Cancels the stream; no handler is called after it. */
  close(): void;
}

/** What a ResourceClient needs from a connection: Connection over gRPC, or an in-memory service in tests. */
export interface UnaryCaller {
  unary<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, opts: CallOptions): Promise<Res>;
}

export class Connection implements UnaryCaller {
  private readonly client: grpc.Client;
  private readonly deadlineMs: number;

  constructor(private readonly options: ConnectionOptions) {
    const channelOptions: grpc.ChannelOptions = {
      "grpc.max_receive_message_length": options.maxReceiveMessageBytes ?? DEFAULT_MAX_RECEIVE_MESSAGE_BYTES,
    };
    if (options.transport.kind === "tls" && options.transport.serverNameOverride) {
      channelOptions["grpc.ssl_target_name_override"] = options.transport.serverNameOverride;
    }
    this.client = new grpc.Client(options.address, channelCredentials(options.transport), channelOptions);
    this.deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
  }

  close(): void {
    this.client.close();
  }

  /** Calls `method` once, or with retries when `opts.idempotent`; failures come back classified. */
  async unary<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, opts: CallOptions): Promise<Res> {
    const once = () => this.attempt(method, request, opts);
    if (!opts.idempotent) return once();
    return retry(once, {
      policy: this.options.retry,
      clock: this.options.clock ?? systemClock,
      retryable: isTransient,
    });
  }

  private async attempt<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, opts: CallOptions): Promise<Res> {
    const metadata = await this.authMetadata(method.path);
    for (const [k, v] of Object.entries(opts.metadata ?? {})) metadata.set(k, v);
    const deadline = Date.now() + this.deadlineMs;
    return new Promise<Res>((resolve, reject) => {
      this.client.makeUnaryRequest(method.path, method.requestSerialize, method.responseDeserialize, request,
        metadata, { deadline }, (err, value) => {
          this.options.onCall?.(method.path, grpc.status[err ? err.code : grpc.status.OK] ?? "UNKNOWN");
          if (err) reject(classifyCallError(method.path, err));
          else if (value === undefined) reject(new Error(`${method.path}: empty response`));
          else resolve(value);
        });
    });
  }

  /**
   * Opens a server stream with no deadline (it lasts until closed). `onOpen` once the server has sent its
   * response headers; `onEnd` once, when the stream ends for any reason but close(), with the classified
   * error (a FulfillmentError, or an Error when the server ended it with OK).
   */
  openStream<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, handlers: StreamHandlers<Res>): OpenStream {
    let call: grpc.ClientReadableStream<Res> | undefined;
    let closed = false;
    let ended = false;
    const end = (err: unknown) => {
      if (ended || closed) return;
      ended = true;
      handlers.onEnd(err);
    };
    this.authMetadata(method.path).then((metadata) => {
      if (closed) return;
      try {
        call = this.client.makeServerStreamRequest(method.path, method.requestSerialize, method.responseDeserialize, request, metadata, {});
      } catch (err) {
        end(err); // a closed channel throws here
        return;
      }
      call.on("metadata", () => !closed && !ended && handlers.onOpen?.());
      call.on("data", (message: Res) => !closed && !ended && handlers.onMessage(message));
      call.on("status", (status: grpc.StatusObject) => {
        if (!closed) this.options.onCall?.(method.path, grpc.status[status.code] ?? "UNKNOWN");
        if (status.code === grpc.status.OK) end(new Error(`${method.path}: the server ended the stream`));
      });
      call.on("error", (err) => end(classifyCallError(method.path, err)));
    }, end);
    return {
      close: () => {
        closed = true;
        call?.cancel();
      },
    };
  }

  /** Request metadata with the bearer token read now. */
  private async authMetadata(path: string): Promise<grpc.Metadata> {
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${await this.readToken(path)}`);
    return metadata;
  }

  private async readToken(path: string): Promise<string> {
    let token: string;
    try {
      token = (await fs.promises.readFile(this.options.tokenFile, "utf8")).trim();
    } catch (err) {
      throw new UnauthenticatedError(path, grpc.status.UNAUTHENTICATED,
        `cannot read token file ${this.options.tokenFile}: ${(err as NodeJS.ErrnoException).code ?? "error"}`);
    }
    if (!token) {
      throw new UnauthenticatedError(path, grpc.status.UNAUTHENTICATED, `token file ${this.options.tokenFile} is empty`);
    }
    return token;
  }
}
