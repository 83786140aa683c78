"""LLM relevance labels for unjudged results, calibrated against the people's labels before they count.

``ragtriage judge`` asks an OpenAI-compatible chat-completions endpoint to grade (query, unit text) pairs
(``client``, ``prompt``), keeps every answer as a cache and provenance (``answers``), plans and runs a session
(``session``), measures agreement with the people (``calibrate``), stores the parsed grades as a new dataset
version under annotator ``judge:<model>`` (``fill``) and reports what they change (``impact``).
"""

from ragtriage.judge.answers import JudgeIdentity, answer_key
from ragtriage.judge.calibrate import Calibration, Figure, calibration
from ragtriage.judge.client import Endpoint, JudgeError
from ragtriage.judge.fill import FillReport, NotCalibrated, check_calibration, fill_version
from ragtriage.judge.impact import measure_changes, ranking_agreement
from ragtriage.judge.pairs import calibration_pairs, file_pairs, pool_pairs
from ragtriage.judge.prompt import DEFAULT_PROMPT, Prompt, PromptError, Scale, load_prompt, parse_answer
from ragtriage.judge.session import Plan, Tally, answers_of, ask, plan

__all__ = [
    "DEFAULT_PROMPT",
    "Calibration",
    "Endpoint",
    "Figure",
    "FillReport",
    "JudgeError",
    "JudgeIdentity",
    "NotCalibrated",
    "Plan",
    "Prompt",
    "PromptError",
    "Scale",
    "Tally",
    "answer_key",
    "answers_of",
    "ask",
    "calibration",
    "calibration_pairs",
    "check_calibration",
    "file_pairs",
    "fill_version",
    "load_prompt",
    "measure_changes",
    "parse_answer",
    "plan",
    "pool_pairs",
    "ranking_agreement",
]
