"""Greedy JSON-schema decoding for local models: the model is asked only where the schema leaves a choice.

llama.cpp's grammar sampler holds a model to a JSON schema, but the model still generates
every token one by one, including those the schema already fixes: keys, braces, commas,
a ``const`` evidence id, the rest of an entity name once its first token has told it
apart from the other names of an ``enum``. In a grounded answer (a per-question schema of
ids and entity enums, :mod:`kgmind.prompts.grounded`) that is most of the output. Here the
schema is walked in Python instead:

- fixed text is appended without asking the model and evaluated in one batch with the
  next decision, at prompt speed (a batch of tokens costs about what one generated
  token costs on a CPU, which is bound by reading the weights);
- an ``enum``/``const`` choice asks the model only until one option is left; the model
  may pick any token that starts, or is, a prefix of an option;
- a free string is generated token by token, held to JSON string content (no quote,
  backslash or control character) and ``maxLength``; a token that closes the string
  (``"`` or ``.",``) ends it; the strings that end because the model's own next token did
  not fit are reported (:attr:`DecodeResult.cut`), so a reader can end them where a
  person can stop (:func:`kgmind.text.end_cut`);
- with ``east_asian=False`` (the prompt has no East Asian character) a free string holds
  none either: the 0.5B model drifts into Chinese in English answers ("lack of休息");
- whether an array goes on is one choice between ``,`` and ``]``;
- the last token of fixed text is held back and the next decision must start with it
  (token healing), so the model picks ``":"`` or ``" "Fever`` as it would have.

Decoding is greedy (temperature 0), as the local models run. Only the subset of JSON
schema kgmind's answer schemas use is supported (objects with their properties in
order, arrays with ``minItems``/``maxItems``, strings with ``minLength``/``maxLength``,
string ``enum``/``const``, ``anyOf`` of objects told apart by a constant first property,
``$ref`` into ``$defs``); :func:`supports` says whether a schema is, and anything else
stays with llama.cpp's grammar. Every object property is written, in schema order.

The modules: :mod:`.vocabulary` (the token table), :mod:`.writer` (fixed text and the
model's decisions), :mod:`.walker` (the schema subset, :func:`iter_json`).
"""

from kgmind.llm.schema_decoding.vocabulary import TokenTable, has_east_asian
from kgmind.llm.schema_decoding.walker import decode_json, iter_json, supports
from kgmind.llm.schema_decoding.writer import DecodeResult, SchemaNotSupportedError, TokenModel

__all__ = [
    "DecodeResult",
    "SchemaNotSupportedError",
    "TokenModel",
    "TokenTable",
    "decode_json",
    "has_east_asian",
    "iter_json",
    "supports",
]
