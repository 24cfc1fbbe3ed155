// The Search view's query embedded ahead (latency hidden): its image as soon as it is added, its
// text on a typing pause, by the encoder the query will use (only when that model is already loaded:
// a first query loads it and tells its story). Pressing Search then takes these vectors instead of
// embedding again (the encoder client's embedRunQueries asks through PrefetchLookup); a vector is used
// only for the same image (the same Blob), the same text and the same loaded encoder (model, options,
// worker), so a result never mixes encoders.
import { embedQuery, type PrefetchLookup } from '../clients/encoder-client';

interface Pending<T> {
  value: T;
  encoder: string;
  vector: Promise<Float32Array | null>;
}

export class QueryPrefetch implements PrefetchLookup {
  #image: Pending<Blob> | null = null;
  #text: Pending<string> | null = null;
  #running = new Set<Promise<unknown>>();
  /** Prefetched vectors a query used (tests and the latency bench read it). */
  hits = 0;

  #start<T>(value: T, encoder: string, text: string | null, image: Blob | null): Pending<T> {
    const call = embedQuery(text, image);
    this.#running.add(call);
    void call.finally(() => this.#running.delete(call)).catch(() => undefined);
    const vector = call.then(
      (r) => (text !== null ? r.text : r.image),
      () => null,
    );
    return { value, encoder, vector };
  }

  /** Embeds the query image now (once per image and encoder). */
  image(blob: Blob, encoder: string): void {
    if (this.#image?.value === blob && this.#image.encoder === encoder) return;
    this.#image = this.#start(blob, encoder, null, blob);
  }

  /** Embeds the query text now (once per text and encoder). */
  text(text: string, encoder: string): void {
    if (this.#text?.value === text && this.#text.encoder === encoder) return;
    this.#text = this.#start(text, encoder, text, null);
  }

  take(encoder: string, text: string | null, image: Blob | null) {
    const copy = (p: Pending<unknown>) =>
      p.vector.then((v) => {
        if (!v) return null;
        this.hits++;
        return v.slice();
      });
    const t = this.#text;
    const i = this.#image;
    return {
      text: t && text !== null && t.value === text && t.encoder === encoder ? copy(t) : null,
      image: i && image !== null && i.value === image && i.encoder === encoder ? copy(i) : null,
    };
  }

  async settled(): Promise<void> {
    await Promise.allSettled([...this.#running]);
  }

  /** Forgets every prefetched vector (another shard; the image removed). */
  clear(): void {
    this.#image = null;
    this.#text = null;
  }
}
