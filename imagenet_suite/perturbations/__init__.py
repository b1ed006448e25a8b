"""Image perturbations: the ImageNet-C / imagecorruptions corruptions in NumPy (:mod:`.corruptions`)
and batched in torch (:mod:`.corruptions_torch`), imgaug 0.4 on NumPy 2 (:mod:`.imgaug_compat`), and
the preview grid of a corruption at every severity (:mod:`.grid`)."""
