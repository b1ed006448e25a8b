r"""BibTeX entries that several builders' ``CITATION`` share: the datasets' own papers and the papers
whose evaluation protocols the suite implements.

A card's ``## Citation`` block (``imagenet_suite.core.card``) is the builder's ``CITATION``: the
dataset's own paper first, then the papers that define the protocol it is used with. The five
protocol papers:

* :data:`BEYOND_ACCURACY` — Hesse et al. 2025, QUBA (nine quality dimensions of ImageNet models);
* :data:`ANZAKU_2024` — Anzaku et al. 2024, PatchML and ASMA (multi-label evaluation);
* :data:`NINCO` — Bitterwolf et al. 2023, NINCO and the OOD unit tests;
* :data:`HEUILLET_2025` — Heuillet et al. 2025, robust generalization (common corruptions, Sum/Borda);
* :data:`LCA_ON_THE_LINE` — Shi et al. 2024, LCA distance in a class hierarchy vs OOD accuracy.
"""

from __future__ import annotations

ILSVRC = r"""@article{ILSVRC15,
  title = {{ImageNet} Large Scale Visual Recognition Challenge},
  author = {Olga Russakovsky and Jia Deng and Hao Su and Jonathan Krause and Sanjeev Satheesh and Sean Ma and
            Zhiheng Huang and Andrej Karpathy and Aditya Khosla and Michael Bernstein and Alexander C. Berg and Li Fei-Fei},
  journal = {International Journal of Computer Vision (IJCV)},
  volume = {115}, number = {3}, pages = {211--252}, year = {2015},
  eprint = {1409.0575}, archivePrefix = {arXiv}}"""

BEYOND_ACCURACY = r"""@article{hesse2025beyond,
  title = {Beyond Accuracy: What Matters in Designing Well-Behaved Models?},
  author = {Robin Hesse and Do{\u{g}}ukan Ba{\u{g}}c{\i} and Bernt Schiele and Simone Schaub-Meyer and Stefan Roth},
  journal = {arXiv preprint arXiv:2503.17110}, year = {2025},
  eprint = {2503.17110}, archivePrefix = {arXiv}}"""

ANZAKU_2024 = r"""@article{anzaku2024reassessing,
  title = {Re-assessing {ImageNet}: How aligned is its single-label assumption with its multi-label nature?},
  author = {Esla Timothy Anzaku and Seyed Amir Mousavi and Arnout Van Messem and Wesley De Neve},
  journal = {arXiv preprint arXiv:2412.18409}, year = {2024},
  eprint = {2412.18409}, archivePrefix = {arXiv}}"""

NINCO = r"""@inproceedings{bitterwolf2023ninco,
  title = {In or Out? Fixing {ImageNet} Out-of-Distribution Detection Evaluation},
  author = {Julian Bitterwolf and Maximilian M{\"u}ller and Matthias Hein},
  booktitle = {Proceedings of the 40th International Conference on Machine Learning (ICML)},
  series = {PMLR}, volume = {202}, year = {2023},
  eprint = {2306.00826}, archivePrefix = {arXiv}}"""

HEUILLET_2025 = r"""@article{heuillet2025guide,
  title = {A Guide to Robust Generalization: The Impact of Architecture, Pre-training, and Optimization Strategy},
  author = {Maxime Heuillet and Rishika Bhagwatkar and Jonas Ngnaw{\'e} and Yann Pequignot and Alexandre Larouche and
            Christian Gagn{\'e} and Irina Rish and Ola Ahmad and Audrey Durand},
  journal = {arXiv preprint arXiv:2508.14079}, year = {2025},
  eprint = {2508.14079}, archivePrefix = {arXiv}}"""

LCA_ON_THE_LINE = r"""@inproceedings{shi2024lca,
  title = {{LCA}-on-the-Line: Benchmarking Out-of-Distribution Generalization with Class Taxonomies},
  author = {Jia Shi and Gautam Gare and Jinjin Tian and Siqi Chai and Zhiqiu Lin and Arun Vasudevan and Di Feng and
            Francesco Ferroni and Shu Kong},
  booktitle = {Proceedings of the 41st International Conference on Machine Learning (ICML)},
  series = {PMLR}, volume = {235}, year = {2024},
  eprint = {2407.16067}, archivePrefix = {arXiv}}"""

IMAGENET_C = r"""@inproceedings{hendrycks2019benchmarking,
  title = {Benchmarking Neural Network Robustness to Common Corruptions and Perturbations},
  author = {Dan Hendrycks and Thomas Dietterich},
  booktitle = {International Conference on Learning Representations (ICLR)}, year = {2019},
  eprint = {1903.12261}, archivePrefix = {arXiv}}"""

NATURAL_ADVERSARIAL_EXAMPLES = r"""@inproceedings{hendrycks2021nae,
  title = {Natural Adversarial Examples},
  author = {Dan Hendrycks and Kevin Zhao and Steven Basart and Jacob Steinhardt and Dawn Song},
  booktitle = {Conference on Computer Vision and Pattern Recognition (CVPR)}, year = {2021},
  eprint = {1907.07174}, archivePrefix = {arXiv}}"""

SCALING_OOD = r"""@inproceedings{hendrycks2022scaling,
  title = {Scaling Out-of-Distribution Detection for Real-World Settings},
  author = {Dan Hendrycks and Steven Basart and Mantas Mazeika and Andy Zou and Joe Kwon and Mohammadreza Mostajabi
            and Jacob Steinhardt and Dawn Song},
  booktitle = {International Conference on Machine Learning (ICML)}, year = {2022},
  eprint = {1911.11132}, archivePrefix = {arXiv}}"""

IMAGENET_SKETCH = r"""@inproceedings{wang2019learning,
  title = {Learning Robust Global Representations by Penalizing Local Predictive Power},
  author = {Haohan Wang and Songwei Ge and Zachary Lipton and Eric P. Xing},
  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},
  pages = {10506--10518}, year = {2019},
  eprint = {1905.13549}, archivePrefix = {arXiv}}"""


MOS = r"""@inproceedings{huang2021mos,
  title = {{MOS}: Towards Scaling Out-of-distribution Detection for Large Semantic Space},
  author = {Rui Huang and Yixuan Li},
  booktitle = {Conference on Computer Vision and Pattern Recognition (CVPR)}, year = {2021},
  eprint = {2105.01879}, archivePrefix = {arXiv}}"""

DTD = r"""@inproceedings{cimpoi2014describing,
  title = {Describing Textures in the Wild},
  author = {Mircea Cimpoi and Subhransu Maji and Iasonas Kokkinos and Sammy Mohamed and Andrea Vedaldi},
  booktitle = {Conference on Computer Vision and Pattern Recognition (CVPR)}, year = {2014},
  eprint = {1311.3618}, archivePrefix = {arXiv}}"""

VIM = r"""@inproceedings{wang2022vim,
  title = {{ViM}: Out-Of-Distribution with Virtual-logit Matching},
  author = {Haoqi Wang and Zhizhong Li and Litong Feng and Wayne Zhang},
  booktitle = {Conference on Computer Vision and Pattern Recognition (CVPR)}, year = {2022},
  eprint = {2203.10807}, archivePrefix = {arXiv}}"""

SSB = r"""@inproceedings{vaze2022openset,
  title = {Open-Set Recognition: a Good Closed-Set Classifier is All You Need?},
  author = {Sagar Vaze and Kai Han and Andrea Vedaldi and Andrew Zisserman},
  booktitle = {International Conference on Learning Representations (ICLR)}, year = {2022},
  eprint = {2110.06207}, archivePrefix = {arXiv}}"""

OPENOOD_V15 = r"""@article{zhang2023openood,
  title = {{OpenOOD} v1.5: Enhanced Benchmark for Out-of-Distribution Detection},
  author = {Jingyang Zhang and Jingkang Yang and Pengyun Wang and Haoqi Wang and Yueqian Lin and Haoran Zhang and
            Yiyou Sun and Xuefeng Du and Yixuan Li and Ziwei Liu and Yiran Chen and Hai Li},
  journal = {arXiv preprint arXiv:2306.09301}, year = {2023},
  eprint = {2306.09301}, archivePrefix = {arXiv}}"""


def cite(*entries: str) -> str:
    """A ``CITATION``: the entries in order (the dataset's own paper first), one blank line apart."""
    return "\n\n".join(entry.strip() for entry in entries)
