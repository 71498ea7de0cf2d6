import json, sys, re, collections
import kgmind.schema_decoding as SD
takes=[]
orig_take=SD._Writer._take
def _take(self, token):
    heal=self.heal
    r=orig_take(self, token)
    takes.append((heal.decode('utf8','replace'), self.t.bytes[token].decode('utf8','replace'), bytes(self.out[-40:]).decode('utf8','replace')))
    return r
SD._Writer._take=_take
orig_choose=SD._Writer.choose
from kgmind import llm as L
cls = L._locked_llama_class()
o2 = cls._schema_stream
calls=[]
def wrapped(self, messages, schema, kwargs):
    takes.clear()
    for ch in o2(self, messages, schema, kwargs): yield ch
    calls.append({"ev":"evidence_ids" in json.dumps(schema),"title":schema.get("title"),"takes":list(takes)})
cls._schema_stream = wrapped
from kgmind.eval.runner import EvalConfig, run_eval
cfg = EvalConfig(dataset="genmedgpt5k", methods=sys.argv[1], llm="local", split="calib", limit=int(sys.argv[2]), seed=int(sys.argv[3]),
    memory_sample=0, bertscore=False, llm_cache="off", interleave=True)
run_eval(cfg, keep_rows=True)
json.dump(calls, open('/tmp/probe/takes.json','w'))
