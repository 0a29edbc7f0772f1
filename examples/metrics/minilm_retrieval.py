"""Paraphrase retrieval top-1 for all-MiniLM-L6-v2 eval data (rows i and i+P are paraphrases).

Use: workbench-cli autotune model.onnx ... --metric examples/metrics/minilm_retrieval.py --allow-code
"""

from workbench.core.analysis.metrics import retrieval_top1


def metric(outputs, batch):
    emb = outputs["sentence_embedding"].reshape(len(outputs["sentence_embedding"]), -1)
    p = len(emb) // 2
    return retrieval_top1(emb[:p], emb[p:])
