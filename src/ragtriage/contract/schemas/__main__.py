from pathlib import Path

from ragtriage.contract.schemas import write_all

for p in write_all(Path(__file__).parent):
    print(p)
