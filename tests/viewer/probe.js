// Runs in the neuroglancer client (window.viewer) through WebDriver's
// executeAsyncScript: arguments = [request, callback]. request.op:
//
//   "geometry": {layer, timeoutMs} -> the layer's levels as the slice view
//     renders them: per level its chunk-to-layer transform read back as a
//     scale and an origin per layer dimension (layer coordinates are the
//     model's: base voxels), its shape, chunk shape and URL; the model space
//     (names, physical scales, units) and the global coordinate space.
//   "values": {layer, timeoutMs, points: [{level, point: {name: coord}}]} ->
//     for each point (in layer coordinates, by dimension name) the value that
//     level's chunk source holds there: the viewer is moved to the point, and
//     the chunk holding it is waited for.
//
// The answer is {ok: true, ...} or {ok: false, error}; every wait is bounded.
const [request, done] = arguments;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const deadline = Date.now() + request.timeoutMs;

function errorText(e) {
  let s = String(e);
  for (let c = e && e.cause; c; c = c.cause) s += `: ${String(c)}`;
  return s;
}

// The managed layer, its load state, and the render layer's sources in the
// slice view: undefined while loading (also before the state that adds the
// layer has reached the page), {error} on failure.
function findLayer(name) {
  const managed = viewer.layerManager.getLayerByName(name);
  if (managed === undefined) return undefined;
  const layer = managed.layer;
  if (layer == null) return undefined;
  for (const ds of layer.dataSources) {
    const s = ds.loadState;
    if (s === undefined) return undefined;
    if (s.error !== undefined) return { error: errorText(s.error) };
  }
  for (const panel of viewer.display.panels) {
    const sliceView = panel.sliceView;
    if (sliceView === undefined) continue;
    for (const [renderLayer, info] of sliceView.visibleLayers) {
      if (!layer.renderLayers.includes(renderLayer)) continue;
      if (info.allSources.length === 0) continue;
      return { managed, layer, renderLayer, sliceView, sources: info.allSources[0] };
    }
  }
  return undefined;
}

async function waitLayer(name) {
  for (;;) {
    const found = findLayer(name);
    if (found !== undefined) return found;
    if (Date.now() > deadline) {
      const known = viewer.layerManager.getLayerByName(name) !== undefined;
      throw new Error(`layer ${name}: not loaded in time${known ? "" : " (the page has no layer of that name)"}`);
    }
    await sleep(100);
  }
}

function levelUrl(multiscale, i) {
  const scales = multiscale.scales ?? multiscale.multiscale?.scales;
  const scale = scales?.filter((s) => s !== undefined)[i];
  return scale?.url;
}

function geometry(found) {
  const { renderLayer, sources } = found;
  const modelSpace = renderLayer.multiscaleSource.modelSpace;
  const levels = sources.map((tsource, i) => {
    const ct = tsource.chunkTransform;
    const R = ct.layerRank;
    const M = ct.chunkToLayerTransform;
    const spec = tsource.source.spec;
    const names = ct.modelTransform.layerDimensionNames;
    const dims = {};
    for (let r = 0; r < R; ++r) {
      let scale = 0;
      let chunkDim = -1;
      for (let c = 0; c < R; ++c) {
        const m = M[c * (R + 1) + r];
        if (m !== 0) {
          scale += Math.abs(m);
          chunkDim = c;
        }
      }
      dims[names[r]] = {
        scale,
        origin: M[R * (R + 1) + r],
        shape: chunkDim < 0 ? null : spec.upperVoxelBound[chunkDim] - spec.lowerVoxelBound[chunkDim],
        chunk: chunkDim < 0 ? null : spec.chunkDataSize[chunkDim],
      };
    }
    return {
      index: i,
      url: levelUrl(renderLayer.multiscaleSource, i),
      dims,
      chunkToLayerTransform: Array.from(M),
    };
  });
  const global = viewer.coordinateSpace.value;
  return {
    ok: true,
    levels,
    modelSpace: {
      names: Array.from(modelSpace.names),
      scales: Array.from(modelSpace.scales),
      units: Array.from(modelSpace.units),
    },
    globalSpace: {
      names: Array.from(global.names),
      scales: Array.from(global.scales),
      units: Array.from(global.units),
    },
    modelToRenderLayerTransform: Array.from(
      sources[0].chunkTransform.modelTransform.modelToRenderLayerTransform,
    ),
  };
}

// The value level `level` holds at `point` (layer coordinates by name),
// "outside" when the point is outside the level's voxels, or null while its
// chunk is not loaded.
function valueAt(found, level, point) {
  const tsource = found.sources[level];
  const ct = tsource.chunkTransform;
  const R = ct.layerRank;
  const names = ct.modelTransform.layerDimensionNames;
  const p = names.map((n) => point[n]);
  const L = ct.layerToChunkTransform;
  const chunkPosition = new Float32Array(R);
  for (let c = 0; c < R; ++c) {
    let v = L[R * (R + 1) + c];
    for (let r = 0; r < R; ++r) v += L[r * (R + 1) + c] * p[r];
    chunkPosition[c] = v;
  }
  const { lowerVoxelBound, upperVoxelBound } = tsource.source.spec;
  for (let c = 0; c < R; ++c) {
    const i = Math.floor(chunkPosition[c]);
    if (i < lowerVoxelBound[c] || i >= upperVoxelBound[c]) return "outside";
  }
  const v = tsource.source.getValueAt(chunkPosition, ct);
  if (v == null) return null;
  return typeof v === "bigint" ? v.toString() : v;
}

function moveTo(found, point) {
  const ct = found.sources[0].chunkTransform;
  const layerNames = ct.modelTransform.layerDimensionNames;
  const g2l = ct.modelTransform.globalToRenderLayerDimensions;
  const position = new Float32Array(viewer.position.value);
  for (let g = 0; g < g2l.length; ++g) {
    if (g2l[g] >= 0) position[g] = point[layerNames[g2l[g]]];
  }
  viewer.position.value = position;
}

async function values(found, points) {
  const out = [];
  for (const { level, point } of points) {
    moveTo(found, point);
    let v = null;
    for (;;) {
      v = valueAt(found, level, point);
      if (v !== null || Date.now() > deadline) break;
      await sleep(20);
    }
    if (v === null) {
      throw new Error(`level ${level} at ${JSON.stringify(point)}: its chunk was not loaded in time`);
    }
    out.push(v);
  }
  return { ok: true, values: out };
}

(async () => {
  const found = await waitLayer(request.layer);
  if (found.error !== undefined) return { ok: false, error: found.error };
  // Zoomed in to half an s0 voxel per pixel: the slice view then shows
  // every level, from the coarsest to s0, and loads their chunks.
  const scales = found.renderLayer.multiscaleSource.modelSpace.scales;
  viewer.crossSectionScale.value = 0.5 * Math.min(...scales);
  if (request.op === "geometry") return geometry(found);
  if (request.op === "values") return await values(found, request.points);
  return { ok: false, error: `unknown op ${request.op}` };
})().then(done, (e) => done({ ok: false, error: errorText(e) }));
