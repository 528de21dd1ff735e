// `esi controller`: the reconciler (ExternalSecret -> Secret sink, PushSecret).
// Not built yet: it has its own issue. Say so plainly instead of pretending.
export async function main(_argv: string[]): Promise<number> {
  process.stderr.write('esi controller: the reconciler is not implemented in this version yet\n');
  return 1;
}
