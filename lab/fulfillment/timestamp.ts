// google.protobuf.Timestamp in the decoded form (int64 seconds as a string).
export function timestamp(ms: number): { seconds: string; nanos: number } {
  return { seconds: String(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 };
}
