"""What a scenario writes: atomic files, params/metadata tables and splits (``writers``), metric
scene graphs and COCO annotations (``scene_graph``), COCO run-length masks (``coco_rle``)."""
