// The bundled model registry (models/registry.json), parsed and validated once: the embedding models
// the pickers offer and the cross-encoders (rerankers). Shared by the encoder client and the offline
// storage panel, so neither has to import the other.
import registryJson from '../../../../models/registry.json';
import { isCrossEncoder, parseRegistry, type ModelSpec, type Registry } from '../../core/retrieval/models';

const PARSED_REGISTRY: Registry = parseRegistry(registryJson);

/**
 * The bundled model registry (models/registry.json), validated: its embedding models (text, CLIP,
 * SigLIP); `errors` covers every entry, cross-encoders included.
 */
export const MODEL_REGISTRY: Registry = {
  ...PARSED_REGISTRY,
  models: PARSED_REGISTRY.models.filter((m) => !isCrossEncoder(m)),
};

/** The registry's cross-encoders (rerankers), in registry order. */
export const RERANKER_REGISTRY: readonly ModelSpec[] = PARSED_REGISTRY.models.filter(isCrossEncoder);

/** An embedding model of the registry by id. */
export function registryModel(id: string): ModelSpec | undefined {
  return MODEL_REGISTRY.models.find((m) => m.id === id);
}

/** A cross-encoder of the registry by id. */
export function rerankerModel(id: string): ModelSpec | undefined {
  return RERANKER_REGISTRY.find((m) => m.id === id);
}
