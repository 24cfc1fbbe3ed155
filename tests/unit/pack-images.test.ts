// pack-shard --images (scripts/lib/pack-images.ts): the shard's referenced images in stored zips
// named in shard.json, read back by the app's own zip reader (platform/sources/sources/sources.ts) byte for byte.
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packImages } from '../../scripts/lib/pack-images';
import { zipSource } from '../../src/lib/platform/sources/sources';
import { ShardValidationError } from '../../src/lib/core/shard/source';
import { DATA_DIR } from '../paths';

const work = mkdtempSync(join(tmpdir(), 'loupe-pack-images-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A writable copy of vqa-rad (the shared data is read-only). */
function copyShard(name: string): string {
  const dir = join(work, name);
  cpSync(join(DATA_DIR, 'vqa-rad'), dir, { recursive: true });
  chmodSync(dir, 0o755);
  chmodSync(join(dir, 'shard.json'), 0o644);
  return dir;
}

const imagesOf = (dir: string) =>
  readdirSync(join(dir, 'images'))
    .map((f) => `images/${f}`)
    .sort();

async function entries(file: string): Promise<Map<string, Uint8Array>> {
  const src = zipSource(new Blob([readFileSync(file)]), file, { keepPaths: true });
  const out = new Map<string, Uint8Array>();
  for (const path of (await src.list())!) {
    const parts: Uint8Array[] = [];
    for await (const c of (await src.open(path))!) parts.push(c);
    out.set(path, Buffer.concat(parts));
  }
  return out;
}

describe('pack-shard --images', () => {
  it('writes every referenced image, stored, under its shard path, and names the pack in shard.json', async () => {
    const dir = copyShard('one');
    const r = await packImages(dir);
    expect(r.packs).toEqual(['images.zip']);
    expect(r.images).toBe(315);
    expect(JSON.parse(readFileSync(join(dir, 'shard.json'), 'utf8')).images_pack).toBe('images.zip');
    const got = await entries(join(dir, 'images.zip'));
    expect([...got.keys()].sort()).toEqual(imagesOf(dir));
    for (const [path, bytes] of got) expect(Buffer.compare(bytes, readFileSync(join(dir, path)))).toBe(0);
    // Stored: the pack is the images plus zip headers, not recompressed.
    const loose = imagesOf(dir).reduce((s, p) => s + readFileSync(join(dir, p)).byteLength, 0);
    expect(r.bytes).toBeGreaterThan(loose);
    expect(r.bytes).toBeLessThan(loose + 315 * 200);
    expect(existsSync(join(dir, 'images.zip.partial'))).toBe(false);
  });

  it('splits a large image set over numbered packs, and a later run replaces them', async () => {
    const dir = copyShard('split');
    const r = await packImages(dir, dir, { maxFiles: 100 });
    expect(r.packs).toEqual(['images-1.zip', 'images-2.zip', 'images-3.zip', 'images-4.zip']);
    expect(JSON.parse(readFileSync(join(dir, 'shard.json'), 'utf8')).images_pack).toEqual(r.packs);
    const all = new Map<string, Uint8Array>();
    for (const p of r.packs) for (const [k, v] of await entries(join(dir, p))) all.set(k, v);
    expect([...all.keys()].sort()).toEqual(imagesOf(dir));
    // Packed again in one: the numbered packs go, and shard.json names the one pack.
    await packImages(dir);
    expect(readdirSync(dir).filter((f) => f.endsWith('.zip'))).toEqual(['images.zip']);
    expect(JSON.parse(readFileSync(join(dir, 'shard.json'), 'utf8')).images_pack).toBe('images.zip');
  });

  it('packs nothing from an invalid shard: no pack, no partial file, shard.json as it was', async () => {
    const dir = copyShard('invalid');
    const image = imagesOf(dir).at(-1)!;
    chmodSync(join(dir, 'images'), 0o755);
    rmSync(join(dir, image));
    const before = readFileSync(join(dir, 'shard.json'), 'utf8');
    const err = await packImages(dir, dir, { maxFiles: 100 }).catch((e) => e);
    expect(err).toBeInstanceOf(ShardValidationError);
    expect((err as ShardValidationError).issues[0]).toMatchObject({ code: 'missing-image' });
    expect(readdirSync(dir).filter((f) => f.includes('.zip'))).toEqual([]);
    expect(readFileSync(join(dir, 'shard.json'), 'utf8')).toBe(before);
  });

  it('writes into --out, never into the shard read', async () => {
    const dir = copyShard('src');
    const out = join(work, 'out');
    cpSync(dir, out, { recursive: true });
    await packImages(dir, out);
    expect(existsSync(join(out, 'images.zip'))).toBe(true);
    expect(existsSync(join(dir, 'images.zip'))).toBe(false);
    expect(JSON.parse(readFileSync(join(dir, 'shard.json'), 'utf8')).images_pack).toBeUndefined();
  });
});
