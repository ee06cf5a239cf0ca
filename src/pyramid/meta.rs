//! The metadata documents of a pyramid: N5 (neuroglancer, n5-viewer, COSEM), OME-NGFF 0.4 and 0.5, BigDataViewer.
