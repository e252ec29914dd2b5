// A BMI carries its discovery ignition in spec.user_data (about 15 KB, the pull secret inside), and the
// service's List has no field mask. Nothing the program lists BMIs for reads it: it is create-only, the
// provider sends it and never reads it back. So BMI listings drop it from the wire before decoding: a
// listing of 2000 BMIs no longer makes 30 MB of strings in the heap on every pass, and the pull secret
// does not enter the process through a listing. The BMI events of the Events stream drop it the same way.
// Get still decodes the whole object.
import type * as protoLoader from "@grpc/proto-loader";
import { Reader, Writer } from "protobufjs/minimal";
import type { UnaryMethod } from "./connection";

const LENGTH_DELIMITED = 2;

/**
 * `buf` without the field `path[path.length - 1]` of the messages found by following the length-delimited
 * fields `path[0..-1]` (each occurrence, so repeated fields too). The same buffer when nothing was dropped.
 */
export function withoutField(buf: Buffer, path: readonly number[]): Buffer {
  const reader = Reader.create(buf);
  const parts: Uint8Array[] = [];
  let kept = 0;
  while (reader.pos < reader.len) {
    const at = reader.pos;
    const tag = reader.uint32();
    if (tag >>> 3 !== path[0] || (tag & 7) !== LENGTH_DELIMITED) {
      reader.skipType(tag & 7);
      continue;
    }
    const length = reader.uint32();
    const body = buf.subarray(reader.pos, reader.pos + length);
    reader.skip(length);
    const inner = path.length === 1 ? undefined : withoutField(body, path.slice(1));
    if (inner === body) continue;
    parts.push(buf.subarray(kept, at));
    if (inner) parts.push(Writer.create().uint32(tag).uint32(inner.length).finish(), inner);
    kept = reader.pos;
  }
  if (parts.length === 0) return buf;
  parts.push(buf.subarray(kept));
  return Buffer.concat(parts);
}

/** The number of `field` in message `type` of the loaded definition; throws when the protos lack it. */
function fieldNumber(def: protoLoader.PackageDefinition, type: string, field: string): number {
  const fields = (def[type] as { type?: { field?: { name: string; number: number }[] } } | undefined)?.type?.field;
  const number = fields?.find((f) => f.name === field)?.number;
  if (number === undefined) throw new Error(`the fulfillment protos have no field ${type}.${field}`);
  return number;
}

const PKG = "osac.private.v1";

/** The field path of spec.user_data in the BMIs found by following `toBmi` ([type, field] pairs). */
function userDataPath(def: protoLoader.PackageDefinition, toBmi: [string, string][]): number[] {
  return [...toBmi.map(([type, field]) => fieldNumber(def, `${PKG}.${type}`, field)),
    fieldNumber(def, `${PKG}.BareMetalInstance`, "spec"), fieldNumber(def, `${PKG}.BareMetalInstanceSpec`, "user_data")];
}

/** The BMI List method whose answers come without spec.user_data. */
export function listWithoutUserData<Req, Res>(def: protoLoader.PackageDefinition, list: UnaryMethod<Req, Res>): UnaryMethod<Req, Res> {
  const path = userDataPath(def, [["BareMetalInstancesListResponse", "items"]]);
  return { ...list, responseDeserialize: (bytes: Buffer) => list.responseDeserialize(withoutField(bytes, path)) };
}

/** The Events.Watch method whose BMI events come without spec.user_data: nothing the program watches for reads it. */
export function watchWithoutUserData<Req, Res>(def: protoLoader.PackageDefinition, watch: UnaryMethod<Req, Res>): UnaryMethod<Req, Res> {
  const path = userDataPath(def, [["EventsWatchResponse", "event"], ["Event", "bare_metal_instance"]]);
  return { ...watch, responseDeserialize: (bytes: Buffer) => watch.responseDeserialize(withoutField(bytes, path)) };
}
