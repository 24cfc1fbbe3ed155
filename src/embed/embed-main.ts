// embed.html's app: the options from the URL, the theme, then the view.
import { mount } from 'svelte';
import Embed from './Embed.svelte';
import { EmbedState } from './embed.svelte';
import { parseEmbedOptions } from './protocol';
import '../app.css';
import './embed.css';

const params = new URLSearchParams(location.search);
const { options, problems } = parseEmbedOptions((name) => params.get(name));
document.documentElement.dataset.theme = options.theme;
const embed = new EmbedState(options, problems);
export default mount(Embed, { target: document.getElementById('embed')!, props: { embed } });
