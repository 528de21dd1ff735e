// A small protobuf (proto3) codec for the messages of secrets.proto, so the provider
// talks the SecretsServer contract with @grpc/grpc-js alone: no .proto parsing and no
// protobufjs at run time (that would cost the agent ~180 ms and ~5 MiB per start).
// secrets.proto stays the source of truth: test/src/providers/grpc/index.test.ts checks these
// schemas against it with protobufjs in both directions, and the reference plugin
// (examples/grpc-plugin) is generated from the .proto by @grpc/proto-loader.
//
// Encoding is canonical proto3: fields in number order, default values (empty string or
// bytes, enum 0, false, unset message) omitted. Decoding accepts any valid encoding:
// unknown fields are skipped, a repeated scalar field keeps its last value, a repeated
// embedded message is merged.

export type FieldKind = 'string' | 'bytes' | 'enum' | 'bool' | 'message';

export interface Field {
  no: number;
  name: string;
  kind: FieldKind;
  /** The schema of an embedded message (kind `message`). */
  message?: Schema;
}

export interface Schema {
  name: string;
  fields: Field[];
}

/** A decoded or to-be-encoded message: field name → string | Uint8Array | number | boolean | Message. */
export interface Message {
  [field: string]: string | Uint8Array | number | boolean | Message | undefined;
}

export class WireError extends Error {
  override name = 'WireError';
}

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder('utf-8', { fatal: false });

// ---------------------------------------------------------------- encoding

function varint(out: number[], value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new WireError(`cannot encode ${value} as a varint`);
  let v = value;
  while (v > 0x7f) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
}

class Writer {
  private readonly chunks: Uint8Array[] = [];
  private size = 0;

  raw(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.size += bytes.length;
  }

  head(no: number, wire: number, extra?: number): void {
    const b: number[] = [];
    varint(b, no * 8 + wire);
    if (extra !== undefined) varint(b, extra);
    this.raw(Uint8Array.from(b));
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.size);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}

function encodeField(w: Writer, f: Field, v: NonNullable<Message[string]>): void {
  switch (f.kind) {
    case 'string':
    case 'bytes': {
      const bytes = typeof v === 'string' ? utf8.encode(v) : (v as Uint8Array);
      if (bytes.length === 0) return;
      w.head(f.no, WIRE_LEN, bytes.length);
      w.raw(bytes);
      return;
    }
    case 'enum':
      if (v === 0) return;
      w.head(f.no, WIRE_VARINT, v as number);
      return;
    case 'bool':
      if (v !== true) return;
      w.head(f.no, WIRE_VARINT, 1);
      return;
    case 'message': {
      const inner = encode(f.message!, v as Message);
      w.head(f.no, WIRE_LEN, inner.length);
      w.raw(inner);
    }
  }
}

/** Encodes `msg` by `schema`; fields not in the schema are an error (a typo, not data). */
export function encode(schema: Schema, msg: Message): Uint8Array {
  for (const k of Object.keys(msg)) {
    if (!schema.fields.some((f) => f.name === k)) throw new WireError(`${schema.name} has no field "${k}"`);
  }
  const w = new Writer();
  for (const f of [...schema.fields].sort((a, b) => a.no - b.no)) {
    const v = msg[f.name];
    if (v !== undefined) encodeField(w, f, v);
  }
  return w.finish();
}

// ---------------------------------------------------------------- decoding

class Reader {
  at = 0;
  constructor(readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.at >= this.buf.length;
  }

  varint(): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.at >= this.buf.length) throw new WireError('truncated varint');
      const b = this.buf[this.at++]!;
      // Values above 2^53 only occur in fields ESI does not use (skipped): keep a float.
      result += (b & 0x7f) * scale;
      scale *= 0x80;
      if ((b & 0x80) === 0) return result;
    }
    throw new WireError('varint longer than 10 bytes');
  }

  bytes(n: number): Uint8Array {
    if (n > this.buf.length - this.at) throw new WireError('truncated length-delimited field');
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }

  skip(wire: number): void {
    if (wire === WIRE_VARINT) this.varint();
    else if (wire === WIRE_I64) this.bytes(8);
    else if (wire === WIRE_LEN) this.bytes(this.varint());
    else if (wire === WIRE_I32) this.bytes(4);
    else throw new WireError(`unsupported wire type ${wire}`);
  }
}

function expectWire(schema: Schema, f: Field, wire: number): void {
  const want = f.kind === 'enum' || f.kind === 'bool' ? WIRE_VARINT : WIRE_LEN;
  if (wire !== want) throw new WireError(`${schema.name}.${f.name}: wire type ${wire}, expected ${want}`);
}

function decodeInto(schema: Schema, buf: Uint8Array, out: Message): Message {
  const r = new Reader(buf);
  while (!r.done) {
    const tag = r.varint();
    const no = Math.floor(tag / 8);
    const wire = tag % 8;
    const f = schema.fields.find((x) => x.no === no);
    if (!f) {
      r.skip(wire);
      continue;
    }
    expectWire(schema, f, wire);
    switch (f.kind) {
      case 'string':
        out[f.name] = fromUtf8.decode(r.bytes(r.varint()));
        break;
      case 'bytes':
        out[f.name] = Uint8Array.from(r.bytes(r.varint()));
        break;
      case 'enum':
        out[f.name] = r.varint();
        break;
      case 'bool':
        out[f.name] = r.varint() !== 0;
        break;
      case 'message': {
        const prev = out[f.name];
        out[f.name] = decodeInto(f.message!, r.bytes(r.varint()), prev && typeof prev === 'object' && !(prev instanceof Uint8Array) ? prev : defaults(f.message!));
      }
    }
  }
  return out;
}

/** The proto3 defaults of a schema's scalar fields (messages stay unset). */
function defaults(schema: Schema): Message {
  const out: Message = {};
  for (const f of schema.fields) {
    if (f.kind === 'string') out[f.name] = '';
    else if (f.kind === 'bytes') out[f.name] = new Uint8Array();
    else if (f.kind === 'enum') out[f.name] = 0;
    else if (f.kind === 'bool') out[f.name] = false;
  }
  return out;
}

/** Decodes `buf` by `schema`, filling proto3 defaults for absent scalar fields. */
export function decode(schema: Schema, buf: Uint8Array): Message {
  return decodeInto(schema, buf, defaults(schema));
}
