"""Reference outputs of the packaged sentence encoders on :data:`~ragtruth_spans.models.onnx_encoder.PROBE`: what a
cached ONNX export is checked against each time it is loaded (:func:`~ragtruth_spans.models.onnx_encoder.load_onnx`).

They live in the package, not in the cache, so that an export rewritten together with the record beside it is
still caught: the cache can rewrite itself, not these. Keyed by the SHA-256 of the weights
(:data:`~ragtruth_spans.models.pretrained.PACKAGED_MODELS`; :func:`reference_key` for an encoder that runs only its
first layers); each value is the probe texts' mean-pooled, unit-length
last hidden states from torch (``len(PROBE) x dim``), as little-endian float16, base64 —
:func:`~ragtruth_spans.models.onnx_encoder.torch_probe` makes them and a test checks them against torch.
"""

from __future__ import annotations

import base64

import numpy as np

PROBE_REFERENCE: dict[str, tuple[int, str]] = {
    # sentence-transformers/all-MiniLM-L6-v2 (384 dimensions)
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db": (384, (
        "3SFiLi4szi6IKGedRS5HnbAY4aN+LsGp46SDl2am4aZ8pJSoWKvpKBClmSDkIj4p1ayJIaKliyDpKTck0qbBLOScny0rLcYsu54M"
        "IDspPap1JXOsgSrzK1mp+KBhGGume6nTq3CvLKlPqmGodRs0Kbypn5+fIpUm0SRUqsyvjS26MEil3yTtqlWpcS7LoKKQAKq3II8a"
        "AatFJ0SgMi+Vqh6lyK0CqQMtGKE3p38tsLAqqMIh6J88sUqtbCoKoXYffRwJnyYlji6sKZIq4aY6KCWwqKs+q66pJScMoWKodxRb"
        "KnMkJB3dokoc4Sb8qj0rgiZ9IWChVigYIwWLticAgE0kxyTCJrYoPa3gKjisHCx6qj0ssajAIjWjMypJKEAnRapILdwZLKQwpxKj"
        "c6M6qOomja4TJmWn36p/I8utAizQqHQqeSfIpEosYahYqVwdN6n1ICMqtB15KuyqaalXJp2pMizTJoglWyz5qe4stiglqCEkXqQV"
        "LTsnpSjarIUq5SF+K5ulWqjTLYYlELCAqt2h3CWyl8KVn6MlLncqVhtWmA+v9ivNoKatcqRdH5Kwah8THgep7ylrow6kuiYAANys"
        "d6tXrNssECsAqbOnM6CiqYkmQCIRqd4qLql+HzEkESmfpLQnIS0qpcMuQ6Bxp+CmvCvHKqKsQ7C5oMEjFKqsrQQoqaQYKnYwI6rn"
        "p3cnMCrgKjueVywcDFsjg6q+JPAfkipTpIgsFqMHmUytwqu9qP2smQwhp9Qhf6MoqsYqBCu+nt0fSy1fLZql4i4Ap1SpYKUWnp0g"
        "jay2r5Co4iMEJTmou5+zoFUr962tqi8jRRYdKxkjUar6J/6e5Z4AgEgpPaj3qQmY/ynvKK6nj6fRqAkm2SpcKzQYpC2cKH4cUqyE"
        "qlGtwyecKNou96g+IfUkoSdDKoQsKKn2poMeyy7OrjyoealgKjcmXCbeKayk/K3FJzOmPiwvp9CoYKmkniCjMyLzJrqldixVom+l"
        "qSNiJXofca/eKLQsuSrJCuKs9SWLKJ8MRqWwqjukOSk2KCGcx6ROJ8ipGSajkz2s56y/qUWqHqeRHQosni2ujX+Y+iDJoR6qjKas"
        "KyIrqJq5K0cofixtK9mf46otIj0pNCIEKd2sHyyOLFkqBKmgrv0p3yYmKCUWaCqIqsYlDKD6q8OoMyqLrForlye6rA6sAyzKLBGc"
        "RalirdaqYS0+ol4pKqJ6Kmaq76wmKHYg/C03qhWhWaxaKvkqISiorcUsiqc3JW8nLikKraIl7y5+rd4svZ/1LNChUydSGNUrTZ38"
        "nc+wjaZOoHelNKBtq2ulWaiSnK8l06XTptip9ivJKTCeSaA+Jg2qKaJ1HaGVSKYAgOSZQiEcqIws66QILkesCy8frEIvTJk1rA4t"
        "YSxFIWCBBygiKV8csKgnJJmXHyX7qU0h+5ngKe+rECFTLHqp2SH1q9ilQiS5qJ4tEymGoBEpb53mKr0rbRwMK2GmZSgFLcugJy4m"
        "qqApKyj2qs0sjqwgH00t9a6OKTsrvSqBK5skKaJTI02ss6XyJ4EoR7ClJU2gOql8rWytmytuK8qhVaiBrvqj0ygdKOKmwKgKqAIo"
        "MShUqb0rBqOuGdmqCKYAAKapnSl2sDYekCCar4woVC0ZKKwkqCpgKWYnjaUvpAEe3K2pHz0bYibRnaIqrCdOKgCfLyyMKAatqqxA"
        "J7OqBKuApi8sOqrxpDMwI67Wqoss9SqcKRek+S3hnW6lAyU0qUebJKo3JiohmBxQLHij9qq5rYagx5vJIYYmICuunvkr2Ccppf2p"
        "4iSVqSoowysLH6quwyVRrPapK6QyrdaplYQpIFAj7aiiJcydAqh6IXktDq1QINmk5BhmG4Mms6IAgO0lBCuyrc0ckyuSLBiqTCZ5"
        "q7Sq9x+cKIWkeSgOLLimMqZeq4qs0CjjLBAsFKpQlTerFyiNJFctJCJGrpMoryRWrrWpQKm7KzasViB7LLIkEa62rhariigLISut"
        "xas2rLipe6xdqemqMyheHokpxZ2+qbicMK2hMMAskivrq7Gt"
    )),
    # the same weights, their first four transformer layers (a build with features.encoder_layers: 4)
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db/layers=4": (384, (
        "/KGaKTgsUiZvqR6cLCgYKNMsHKC+KMGQ1J2eK6Yok6UEIkKlPYQEKYyiKS14JuIcc4/cpl4qU6UBLJ6nWiCVKBoqDisvKWqYlqBx"
        "KLwqCKG8nUyqqZu9ILCa0BkxpAclTKyEJSKvmqjzp6wnOadsIN8lf6j+KfOeLCkYpW6q8i+CLfKZnySMqt+pRizcILelzyPAmSKp"
        "5610q5womycVH3gksqx3m6Ioaqz/I2ufGaYWpRIeEZ/YrbEc3Bx/J9ao7qvRn8onGDNiJA2ooif3F40ocaoeI8elEiSipFyry6R7"
        "Jz2mxCiZnnso0yBzpUmkfKZaKUytBCYUr7ymCicWMCQrzaYFGfYqpaNDqcOriaDSoJAlEKhfqQcqaCOBHr+pG6jVKQgoMqeKoQym"
        "cKMlp0ElbK37JumlIhzKMkGiiKWMqOAjfphVngUozqvBGKIkmaWdJoglRilSo8Ooq58AH/SfPyy2KN4mRie1pH+gBySCqR4oQqgt"
        "Jz6nOSw4qoSijRt5I9ysVqVeKVSjLbDWJEQk8Jhcp6sYLSwiJX6onaoPqh6oXCffnCGsoagPo+Ktf6VcphSsa6PApO+hgyrqtp0g"
        "aCiyqf8n3xZZqSmpe5IZqIMjGKfkpoUWuygeKp6WpSl8qs4px51hFoIrIp4+rrIlECjsLimqC7DeJx6M1azfqQApQxybHDctOSCC"
        "mvAnkioYmBWqlCiqJ02pq6xvpHccDCzzpi0lS6gbo8Cmz6tEq8agsSZbq+gkSCosmk6oHitLo0ipnSNsJ/ce8CqyodUBYqwlqtei"
        "DSd3q8mnDiJvGQysmxkCJW4sIChGnTMjASgZo1OndClCGjSp7ycWq+kjvKUUpc+nt5rJKBWpO6hTHjiqgSMmnN2t3yoJoDIn2Kcs"
        "KBC09iJgKfQNWR/HpxenNyH1pMAxwKl1rCOgCy9dpuUkRqDfJuos/SfNKoMlACraGhsrNS+VLO8uXijcoPSoRiWsJnYceCahp9sn"
        "9Crxnpgn96n7H2EpJytYJUuiTB0TKxggH55rqNCnV51XLEAplCCbI5uozyV1HewikamWoqAmtqd8Hy8iIyowH+wh/iPFmeymKqSi"
        "JdsmNaW+LdEovCyKLTWsdqwqpXQjAiOtIR2fGCgwm6qlJCWlI9snZKhoDfiZO6jxpdQh/KhqnCSkr6lQJIAcdKlMmJ0c+jGPLHap"
        "LKV9qpOoGS06GmckWyVMoUClZKhMqwMr8CqHJEaoMB0yqJynfqr7IYegIJ+FJzko7CAGqoEjhpyDLGMgXil5KR6gnyxTHBUnUKCb"
        "JuQT2iLEJB6qYKhkphak26QXJS4fNCSeopCojBpvJMuhbxxjpiel7inKqKKoQhjjLR8oEh2xIrwtShyNpyWs8yP8q2osCaphpjws"
        "pyiJqjuptigOKdmrASQlELWrW5n2rPAlJKL+I02mLZ0rNNSrV6YLqrWmGRy1J7opOai1pN0kmJ87KB4tLKV8nJsZCiiRHgyoMik0"
        "FpUiK6kOqq+nFiDIpAMvfCCpo4YbJymyJkSkqaSUIearZyB5IGUUSaznJvYoLyc0pLCmsCprqEso/Kjvqf6WWiIbIJKo46SuHt+s"
        "hCdAqfeka6lxpfKq1CgMuKYkayirpugoT5QhqIohOCjcIrmkBaWEp8yoCaNqJEWprakRJmGjEpW9oXwgQyKPJPyhOyStKx2jSK31"
        "pVkdEatYhwgn96J2p44rWKm0p6UmVyzXJbqZjSzHoeimO6hIJAqlRxrxoPIqQaeyLXuoja3AouclLykupeUoASNGoGysvS1bpFGo"
        "/SDkpHcpaCi1pbQbLanUrICi2yK8qoUeuaJEpESduKJOonaneiqIJO8sNB3WHsgiqywtKdip+puDqQCh9Ki5qmCck5nTKW6mCqqr"
        "n9KrPiiXKMWrrwyhFLQkZab5nv2zHSftJFGkLqYOnIWgap7/qDcynqYsrdApMSmBpTic+pXZJ7Mn8Cv6IsSr/yUXq6kgGTMlLbAm"
        "l6ZwpdYkFp3rKWQePSXerPaobShqoQgmeqkNLCQnJCnaIFIt"
    )),
}


def reference_key(weights_sha256: str, layers: int | None = None) -> str:
    """The key of :data:`PROBE_REFERENCE` for these weights, cut to their first ``layers`` transformer layers
    (None: all of them, keyed by the SHA-256 alone).

    >>> reference_key("ab" * 32, 3)[-9:]
    '/layers=3'
    """
    return weights_sha256 if layers is None else f"{weights_sha256}/layers={layers}"


def reference(weights_sha256: str, layers: int | None = None) -> np.ndarray | None:
    """The packaged reference (``len(PROBE) x dim`` float32) of the weights with this SHA-256 (their first
    ``layers`` layers; None: all), None for others."""
    found = PROBE_REFERENCE.get(reference_key(weights_sha256, layers))
    if found is None:
        return None
    dimension, encoded = found
    return np.frombuffer(base64.b64decode(encoded), dtype="<f2").astype(np.float32).reshape(-1, dimension)
