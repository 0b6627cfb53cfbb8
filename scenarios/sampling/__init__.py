"""Drawing a labelled view: rejection sampling (``rejection``), label-conditioned proposals,
camera screens, silhouette bounds, SpaRRTa's relation labels and the perceptual-consistency rule."""
