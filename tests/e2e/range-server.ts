// A plain static file server that honours single-range HTTP Range requests (206 + Content-Range, as
// nginx, Apache, GitHub Pages and S3 do) and logs every response with the body bytes it sent, for
// the packed-index e2e. Files of one folder under a sub-path; CORS and CORP open, so a page on
// another origin (the Vite dev server, cross-origin isolated) can read it.
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { resolve, sep } from 'node:path';

export interface RangeLogEntry {
  method: string;
  path: string;
  range?: string;
  status: number;
  /** Body bytes sent. */
  bytes: number;
}

export interface RangeServer {
  /** `http://127.0.0.1:<port><prefix>`, with a trailing slash. */
  url: string;
  log: RangeLogEntry[];
  /** When set, a request whose path it answers with a promise is served once that settles. */
  hold?: (path: string) => Promise<unknown> | undefined;
  close(): Promise<void>;
}

const CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'Range, If-Range',
  'Access-Control-Expose-Headers': 'Content-Range, Content-Length, Accept-Ranges, ETag',
  'Cross-Origin-Resource-Policy': 'cross-origin',
};

/**
 * Serves `root` at `prefix`; `ranges: false` answers every GET with the whole file (status 200).
 * `validators`: each file also gets an ETag (its size and mtime) and Last-Modified, and a Range with an
 * If-Range that does not match them gets the whole file, as real servers do.
 */
export async function serveRanges(
  root: string,
  prefix: string,
  opts: { ranges?: boolean; validators?: boolean } = {},
): Promise<RangeServer> {
  const base = resolve(root);
  const log: RangeLogEntry[] = [];
  const sockets = new Set<Socket>();
  const out: RangeServer = {
    url: '',
    log,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of sockets) s.destroy();
      }),
  };
  const send = (
    res: ServerResponse,
    entry: RangeLogEntry,
    headers: Record<string, string>,
    body?: Uint8Array,
  ) => {
    res.writeHead(entry.status, { ...CORS, ...headers });
    entry.bytes = body?.length ?? 0;
    log.push(entry);
    res.end(body);
  };
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const entry: RangeLogEntry = { method: req.method ?? 'GET', path, status: 0, bytes: 0 };
    if (req.method === 'OPTIONS') return send(res, { ...entry, status: 204 }, {});
    const file = resolve(base, path.slice(prefix.length));
    if (
      !path.startsWith(prefix) ||
      (file !== base && !file.startsWith(base + sep)) ||
      !existsSync(file) ||
      !statSync(file).isFile()
    )
      return send(res, { ...entry, status: 404 }, { 'Content-Type': 'text/plain' }, Buffer.from('not found'));
    const stat = statSync(file);
    const size = stat.size;
    const etag = `"${size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`;
    const lastModified = new Date(Math.floor(stat.mtimeMs / 1000) * 1000).toUTCString();
    const ids: Record<string, string> = opts.validators ? { ETag: etag, 'Last-Modified': lastModified } : {};
    const ifRange = req.headers['if-range'];
    const rangeOk = !opts.validators || ifRange === undefined || ifRange === etag || ifRange === lastModified;
    const read = (start: number, end: number) => {
      const out = Buffer.alloc(end - start);
      const fd = openSync(file, 'r');
      try {
        readSync(fd, out, 0, out.length, start);
      } finally {
        closeSync(fd);
      }
      return out;
    };
    const range = req.headers.range;
    const m = opts.ranges === false || !rangeOk ? null : /^bytes=(\d+)-(\d*)$/.exec(range ?? '');
    if (range && m) {
      const start = Number(m[1]);
      const end = Math.min(size, m[2] === '' ? size : Number(m[2]) + 1);
      if (start >= size || end <= start)
        return send(res, { ...entry, range, status: 416 }, { 'Content-Range': `bytes */${size}` });
      return send(
        res,
        { ...entry, range, status: 206 },
        {
          'Content-Type': 'application/octet-stream',
          'Content-Range': `bytes ${start}-${end - 1}/${size}`,
          'Accept-Ranges': 'bytes',
          'Content-Length': String(end - start),
          ...ids,
        },
        req.method === 'HEAD' ? undefined : read(start, end),
      );
    }
    return send(
      res,
      { ...entry, range, status: 200 },
      { 'Content-Type': 'application/octet-stream', 'Content-Length': String(size), ...ids },
      req.method === 'HEAD' ? undefined : read(0, size),
    );
  };
  const server: Server = createServer((req, res) => {
    const held = out.hold?.(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    if (held) void held.finally(() => serve(req, res));
    else serve(req, res);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('range server did not bind a TCP port');
  out.url = `http://127.0.0.1:${address.port}${prefix}`;
  return out;
}
