"""Template VQA from metric scene graphs (CRISP-style deterministic logic engine, SpaCE-10 /
VSI-Bench question types) and its scoring (accuracy for multiple choice, Mean Relative Accuracy
for numbers). See docs/vqa.md."""
