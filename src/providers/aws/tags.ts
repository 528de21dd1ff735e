// Tags as the JSON object `metadataPolicy: Fetch` returns (ESO: tag key → value).
export function tagsToJson(tags: { Key?: string; Value?: string }[] | undefined): Uint8Array {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const t of tags ?? []) if (t.Key !== undefined) out[t.Key] = t.Value ?? '';
  return new TextEncoder().encode(JSON.stringify(out));
}
