"""Reading ONNX graphs: the index (types, producers, consumers), walks over subgraphs, op families, quantized-op catalog, layout."""
