// Asks whether the Hugging Face hub answers: one HEAD request for a small file, from a worker so that
// a hub out of reach is a quiet "no" (the page's console would log the failed request as an error).
// Message in: the URL; message out: true when it answered with a 2xx within the time allowed.
self.onmessage = async (e: MessageEvent<{ url: string; timeoutMs: number }>) => {
  let ok = false;
  try {
    const res = await fetch(e.data.url, {
      method: 'HEAD',
      cache: 'no-store',
      signal: AbortSignal.timeout(e.data.timeoutMs),
    });
    ok = res.ok;
  } catch {
    ok = false;
  }
  self.postMessage(ok);
};
