"""A fine-tuned local relevance judge (issue #9): train a small LM as a calibrated yes/no scorer and rerank with it.

* :mod:`~retrievekit.core.judge.prompt` -- the versioned prompt templates and answer tokens;
* :mod:`~retrievekit.core.judge.scorer` -- :class:`Judge` (``score_relevance`` + chat delegation), :func:`load_judge`;
* :mod:`~retrievekit.core.judge.data` -- training pairs from qrels or synthesised from a corpus, hard negatives;
* :mod:`~retrievekit.core.judge.train` -- :func:`train_judge` on the shared trainer, Platt calibration;
* :mod:`~retrievekit.core.judge.method` -- ``retrievekit bench --method judge-rerank``.
* :mod:`~retrievekit.core.llm.judge_hooks` -- :func:`judge_relevance`, the hook every judged method calls (with the
  ``refs`` the judge's accuracy is measured on), and ``--judge`` for the bench factories;
* :mod:`~retrievekit.core.judge.oracle` -- the gold-label oracle of ``--judge oracle[:S]`` (a diagnostic);
* :mod:`~retrievekit.core.judge.cosine` -- the embedding-cosine judge of ``--judge cosine``;
* :mod:`~retrievekit.core.llm.delegate` -- free text for judges that only score, from a base chat model.

Examples:
    >>> from retrievekit.core.judge import JudgePrompt, fit_platt
    >>> JudgePrompt().template_id
    'judge-plain-v1'
"""

from retrievekit.core.judge.prompt import JudgePrompt
from retrievekit.core.judge.scorer import JUDGE_KIND, Judge, fit_platt, load_judge

__all__ = ["JUDGE_KIND", "Judge", "JudgePrompt", "fit_platt", "load_judge"]
